/** gRPC calls the gateway's services handled, from their Prometheus `/metrics`. */

const handledLine = /^gateway_grpc_server_handled_total\{([^}]*)\}\s+([0-9.e+]+)$/;

/** Calls handled so far by `<grpc_service>/<grpc_method>`, summed over status codes and services. */
export async function grpcCallsHandled(metricsUrls: readonly string[]): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const url of metricsUrls) {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
    for (const line of (await response.text()).split('\n')) {
      const match = handledLine.exec(line);
      if (!match) continue;
      const labels = Object.fromEntries(
        [...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map(([, name, value]) => [name, value]),
      );
      const method = `${labels.grpc_service}/${labels.grpc_method}`;
      calls.set(method, (calls.get(method) ?? 0) + Number(match[2]));
    }
  }
  return calls;
}

/** Calls per method between two readings, most frequent first; methods not called are left out. */
export function callsBetween(before: Map<string, number>, after: Map<string, number>): [string, number][] {
  return [...after]
    .map(([method, count]): [string, number] => [method, count - (before.get(method) ?? 0)])
    .filter(([, count]) => count > 0)
    .sort(([, a], [, b]) => b - a);
}
