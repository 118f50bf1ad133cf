/** One whole server-sent event, written in a single write so no client ever sees half of one. */
export function sseFrame(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}

export const pingFrame = sseFrame('ping', '{"type":"ping"}');
