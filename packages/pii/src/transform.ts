import { detectDetailed, type Detected } from './detect';
import { assertNonce, CLOSE, placeholder } from './placeholder';
import type { TokenMap } from './restore';
import type { Counts, DetectOptions, EntityType } from './types';

export interface RedactResult {
  readonly texts: string[];
  /** Entities replaced, by type (occurrences, not distinct values). */
  readonly counts: Counts;
}

export interface TokeniseResult {
  readonly texts: string[];
  /** Placeholder → original text, for createRestorer/restoreAll; keep it for this request only. */
  readonly map: TokenMap;
  readonly counts: Counts;
}

/**
 * Replaces the entities of one text, left to right over non-overlapping spans. Appending to one string is faster
 * than collecting the pieces for a join: V8 links the pieces and copies them once, when the result is first read.
 */
function replaceEntities(
  text: string,
  entities: readonly Detected[],
  replacement: (entity: Detected) => string,
): string {
  if (entities.length === 0) return text;
  let output = '';
  let last = 0;
  for (const entity of entities) {
    output += text.slice(last, entity.start) + replacement(entity);
    last = entity.end;
  }
  return output + text.slice(last);
}

/**
 * Numbers values per type across one request: the same key always gets the same replacement, made once from its
 * number (1, 2, … per type) and then reused.
 */
class Numbering {
  private readonly byType = new Map<EntityType, Map<string, string>>();

  replacementOf(type: EntityType, key: string, make: (number: number) => string): string {
    let replacements = this.byType.get(type);
    if (replacements === undefined) {
      replacements = new Map();
      this.byType.set(type, replacements);
    }
    let replacement = replacements.get(key);
    if (replacement === undefined) {
      replacement = make(replacements.size + 1);
      replacements.set(key, replacement);
    }
    return replacement;
  }
}

function count(counts: Partial<Record<EntityType, number>>, entities: readonly Detected[]): void {
  for (const entity of entities) counts[entity.type] = (counts[entity.type] ?? 0) + 1;
}

/**
 * `redact` mode: each entity becomes `[TYPE_n]`, numbered per request across all texts; the same value (by its
 * canonical form: digits only, lower-case email, E.164 phone…) gets the same number. Nothing is kept.
 */
export function redact(texts: readonly string[], options: DetectOptions = {}): RedactResult {
  const numbering = new Numbering();
  const counts: Partial<Record<EntityType, number>> = {};
  const output = texts.map((text) => {
    const entities = detectDetailed(text, options);
    count(counts, entities);
    return replaceEntities(text, entities, (entity) =>
      numbering.replacementOf(entity.type, entity.canonical, (number) => `[${entity.type}_${number}]`),
    );
  });
  return { texts: output, counts };
}

/**
 * `tokenise` mode: each entity becomes a placeholder `[[PII:TYPE:n:<nonce>]]` (see placeholder.ts), numbered per
 * request across all texts; the same original text gets the same placeholder (exact text, so that restoring gives
 * back every character). The map goes to createRestorer/restoreAll.
 * Throws a RangeError if the nonce is malformed or already occurs as a placeholder ending in the input (use a
 * fresh createNonce() per request; a collision then means the nonce leaked).
 */
export function tokenise(texts: readonly string[], nonce: string, options: DetectOptions = {}): TokeniseResult {
  assertNonce(nonce);
  const ending = `:${nonce}${CLOSE}`;
  if (texts.some((text) => text.includes(ending))) throw new RangeError('pii: the nonce already occurs in the input');
  const numbering = new Numbering();
  const counts: Partial<Record<EntityType, number>> = {};
  const map: Record<string, string> = {};
  const output = texts.map((text) => {
    const entities = detectDetailed(text, options);
    count(counts, entities);
    return replaceEntities(text, entities, (entity) =>
      numbering.replacementOf(entity.type, text.slice(entity.start, entity.end), (number) => {
        const token = placeholder(entity.type, number, nonce);
        map[token] = text.slice(entity.start, entity.end);
        return token;
      }),
    );
  });
  return { texts: output, map, counts };
}

/** `flag` mode: how many entities of each type the texts hold (never the values). */
export function countByType(texts: readonly string[], options: DetectOptions = {}): Counts {
  const counts: Partial<Record<EntityType, number>> = {};
  for (const text of texts) count(counts, detectDetailed(text, options));
  return counts;
}
