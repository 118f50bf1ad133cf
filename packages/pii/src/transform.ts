import { detectDetailed, type Detected } from './detect';
import { assertNonce, CLOSE, placeholder } from './placeholder';
import type { TokenMap } from './restore';
import type { Counts, DetectOptions, EntityType } from './types';

export interface TextsOptions extends DetectOptions {
  /**
   * Pairs of texts (indexes) that the model reads one right after the other, such as adjacent text blocks of one
   * message: a value split across the two is found, its placeholder put in the first and its rest removed from
   * the second.
   */
  readonly adjacent?: ReadonlyArray<readonly [number, number]>;
}

/** How far from the boundary of two adjacent texts a value split across them is looked for, on each side. */
const BOUNDARY_WINDOW = 128;

/** An entity of one text; a value split across two adjacent texts is a head piece and a tail piece. */
interface Piece extends Detected {
  /** Head piece: the value's whole original text, over both texts. */
  readonly whole?: string;
  /** Tail piece: the rest of a value whose replacement stands in the text before; it is removed. */
  readonly tail?: boolean;
}

/** Entities of each text, with the values split across adjacent texts (see TextsOptions.adjacent). */
function detectTexts(texts: readonly string[], options: TextsOptions): Piece[][] {
  // A request repeats texts (property names, descriptions, labels): each distinct text is scanned once.
  const memo = new Map<string, Piece[]>();
  const found: Piece[][] = texts.map((text) => {
    let entities = memo.get(text);
    if (entities === undefined) {
      entities = detectDetailed(text, options);
      memo.set(text, entities);
    }
    return [...entities];
  });
  for (const [first, second] of options.adjacent ?? []) {
    const left = texts[first]!;
    const right = texts[second]!;
    const head = left.slice(Math.max(0, left.length - BOUNDARY_WINDOW));
    const cut = head.length;
    const offset = left.length - cut;
    for (const entity of detectDetailed(head + right.slice(0, BOUNDARY_WINDOW), options)) {
      if (entity.start >= cut || entity.end <= cut) continue;
      let headStart = offset + entity.start;
      // The first text already ends inside an entity (its own, or the rest of one split before it): the boundary
      // is that entity's edge, not the middle of another ("a@b.co" then "Please …" is no "a@b.coPlease").
      if (found[first]!.some((other) => other.start <= headStart && other.end >= left.length)) continue;
      // Entities found in either text that overlap the split value become part of it.
      let tailEnd = entity.end - cut;
      found[first] = found[first]!.filter((other) => {
        if (other.end <= headStart) return true;
        headStart = Math.min(headStart, other.start);
        return false;
      });
      found[second] = found[second]!.filter((other) => {
        if (other.start >= tailEnd) return true;
        tailEnd = Math.max(tailEnd, other.end);
        return false;
      });
      const whole = left.slice(headStart) + right.slice(0, tailEnd);
      found[first]!.push({ ...entity, start: headStart, end: left.length, whole });
      found[second]!.unshift({ ...entity, start: 0, end: tailEnd, tail: true });
    }
  }
  return found;
}

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
function replaceEntities(text: string, entities: readonly Piece[], replacement: (entity: Piece) => string): string {
  if (entities.length === 0) return text;
  let output = '';
  let last = 0;
  for (const entity of entities) {
    output += text.slice(last, entity.start) + (entity.tail ? '' : replacement(entity));
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

function count(counts: Partial<Record<EntityType, number>>, entities: readonly Piece[]): void {
  for (const entity of entities) if (!entity.tail) counts[entity.type] = (counts[entity.type] ?? 0) + 1;
}

/**
 * `redact` mode: each entity becomes `[TYPE_n]`, numbered per request across all texts; the same value (by its
 * canonical form: digits only, lower-case email, E.164 phone…) gets the same number. Nothing is kept.
 */
export function redact(texts: readonly string[], options: TextsOptions = {}): RedactResult {
  const numbering = new Numbering();
  const counts: Partial<Record<EntityType, number>> = {};
  const found = detectTexts(texts, options);
  const output = texts.map((text, index) => {
    const entities = found[index]!;
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
export function tokenise(texts: readonly string[], nonce: string, options: TextsOptions = {}): TokeniseResult {
  assertNonce(nonce);
  const ending = `:${nonce}${CLOSE}`;
  if (texts.some((text) => text.includes(ending))) throw new RangeError('pii: the nonce already occurs in the input');
  const numbering = new Numbering();
  const counts: Partial<Record<EntityType, number>> = {};
  const map: Record<string, string> = {};
  const found = detectTexts(texts, options);
  const output = texts.map((text, index) => {
    const entities = found[index]!;
    count(counts, entities);
    return replaceEntities(text, entities, (entity) => {
      const original = entity.whole ?? text.slice(entity.start, entity.end);
      return numbering.replacementOf(entity.type, original, (number) => {
        const token = placeholder(entity.type, number, nonce);
        map[token] = original;
        return token;
      });
    });
  });
  return { texts: output, map, counts };
}

/** `flag` mode: how many entities of each type the texts hold (never the values). */
export function countByType(texts: readonly string[], options: TextsOptions = {}): Counts {
  const counts: Partial<Record<EntityType, number>> = {};
  for (const entities of detectTexts(texts, options)) count(counts, entities);
  return counts;
}
