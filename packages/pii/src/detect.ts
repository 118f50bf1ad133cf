import { emailDetector } from './detectors/email';
import { dobDetector, passportDetector } from './detectors/dates';
import { euIdDetector } from './detectors/eu-ids';
import { ibanDetector } from './detectors/iban';
import { ipDetector } from './detectors/ip';
import { numericDetector } from './detectors/numeric';
import { phoneDetector } from './detectors/phone';
import { ukDetector } from './detectors/uk';
import { isIdentity, normalise, toOriginal } from './normalise';
import { Scan, type Candidate, type Detector } from './scan';
import {
  DETECTOR_TYPES,
  ENTITY_TYPES,
  type DetectOptions,
  type DetectorId,
  type Entity,
  type EntityType,
} from './types';

/** Minimum confidence per detector. Scores are documented in README.md ("Entities and scores"). */
export const DEFAULT_THRESHOLDS: Readonly<Record<DetectorId, number>> = {
  email: 0.5,
  phone: 0.5,
  card: 0.5,
  iban: 0.5,
  uk_nino: 0.5,
  nhs: 0.5,
  uk_postcode: 0.5,
  ipv4: 0.5,
  ipv6: 0.5,
  dob: 0.5,
  passport: 0.5,
  de_steuer_id: 0.5,
  fr_nir: 0.5,
  es_dni: 0.5,
  es_nie: 0.5,
  it_codice_fiscale: 0.5,
  nl_bsn: 0.5,
  pl_pesel: 0.5,
};

const DETECTORS: readonly Detector[] = [
  emailDetector,
  ibanDetector,
  numericDetector,
  phoneDetector,
  ukDetector,
  euIdDetector,
  ipDetector,
  dobDetector,
  passportDetector,
];

/** Fixed order for the last tie-break: the more specific (checksummed) types first. */
const TYPE_RANK: Readonly<Record<EntityType, number>> = {
  IBAN: 0,
  CARD: 1,
  NATIONAL_ID: 2,
  NHS_NUMBER: 3,
  UK_NINO: 4,
  EMAIL: 5,
  PASSPORT: 6,
  PHONE: 7,
  IP_ADDRESS: 8,
  UK_POSTCODE: 9,
  DATE_OF_BIRTH: 10,
};

/** An entity with its canonical value: internal (redact numbering), never returned by detect(). */
export interface Detected extends Entity {
  readonly canonical: string;
}

/** A candidate over its threshold, in original offsets; the normalised span only when it differs (folded text). */
export interface Placed extends Detected {
  readonly normStart?: number;
  readonly normEnd?: number;
}

/** True when `a` wins over `b`: higher confidence, then longer, then earlier, then TYPE_RANK. */
function wins(a: Placed, b: Placed): boolean {
  if (a.confidence !== b.confidence) return a.confidence > b.confidence;
  const lengthA = a.end - a.start;
  const lengthB = b.end - b.start;
  if (lengthA !== lengthB) return lengthA > lengthB;
  if (a.start !== b.start) return a.start < b.start;
  return TYPE_RANK[a.type] < TYPE_RANK[b.type];
}

/**
 * Overlap resolution. Candidates below their threshold are dropped first. The rest are grouped into clusters of
 * spans that overlap (transitively) in the original text; each cluster becomes ONE entity whose span is the
 * union of the cluster (so no character of any confirmed match is left in clear) and whose type, confidence and
 * detector are the winner's (see `wins`). Equal spans of two detectors (an 11-digit number passing both PESEL and
 * Steuer-ID) therefore give one entity.
 */
export function resolveOverlaps(placed: Placed[], normText: string): Detected[] {
  placed.sort((a, b) => a.start - b.start || b.end - a.end);
  const resolved: Detected[] = [];
  let index = 0;
  while (index < placed.length) {
    let winner = placed[index]!;
    let start = winner.start;
    let end = winner.end;
    let normStart = winner.normStart ?? winner.start;
    let normEnd = winner.normEnd ?? winner.end;
    index += 1;
    while (index < placed.length && placed[index]!.start < end) {
      const next = placed[index]!;
      if (wins(next, winner)) winner = next;
      end = Math.max(end, next.end);
      start = Math.min(start, next.start);
      normStart = Math.min(normStart, next.normStart ?? next.start);
      normEnd = Math.max(normEnd, next.normEnd ?? next.end);
      index += 1;
    }
    if (start === winner.start && end === winner.end) {
      // Most entities overlap nothing: the winner itself is the entity (no copy).
      resolved.push(winner);
      continue;
    }
    resolved.push({
      type: winner.type,
      start,
      end,
      confidence: winner.confidence,
      detector: winner.detector,
      canonical: normText
        .slice(normStart, normEnd)
        .replace(/[^\p{L}\p{N}@.]/gu, '')
        .toUpperCase(),
    });
  }
  return resolved;
}

/**
 * Every entity holds a digit (of any script, or a number form such as ①) or is an e-mail address, which holds an
 * '@' (or a fullwidth one, or an encoding or bracketed word normalise decodes): a text with none of these holds no
 * entity, and is not scanned further. Most keys and labels of a request's JSON are such texts.
 */
const MAY_HOLD_ENTITY = /[\p{N}@\uff20\ufe6b%&]|[[({<][ \t]{0,3}at/iu;

export function detectDetailed(text: string, options: DetectOptions = {}): Detected[] {
  if (text.length === 0 || !MAY_HOLD_ENTITY.test(text)) return [];
  const normalised = normalise(text);
  const scan = new Scan(normalised.text, options.now?.getTime());
  const enabled = new Set<EntityType>(options.types ?? ENTITY_TYPES);
  const candidates: Candidate[] = [];
  for (const detector of DETECTORS) {
    if (detector.ids.some((id) => enabled.has(DETECTOR_TYPES[id]))) detector.run(scan, candidates);
  }
  const placed: Placed[] = [];
  for (const candidate of candidates) {
    if (!enabled.has(candidate.type) || candidate.end <= candidate.start) continue;
    const threshold = options.thresholds?.[candidate.detector] ?? DEFAULT_THRESHOLDS[candidate.detector];
    if (candidate.confidence < threshold) continue;
    if (isIdentity(normalised)) {
      // Nothing was folded: normalised offsets are original offsets, and the candidate is the entity as it is.
      placed.push(candidate);
      continue;
    }
    const { start, end } = toOriginal(normalised, candidate.start, candidate.end);
    placed.push({
      type: candidate.type,
      start,
      end,
      confidence: candidate.confidence,
      detector: candidate.detector,
      canonical: candidate.canonical,
      normStart: candidate.start,
      normEnd: candidate.end,
    });
  }
  return resolveOverlaps(placed, normalised.text);
}

/**
 * Personal data in `text`: non-overlapping entities sorted by start, offsets in the ORIGINAL text (UTF-16 code
 * units, end exclusive), whole code points. Pure and synchronous; linear in the length of the text.
 */
export function detect(text: string, options: DetectOptions = {}): Entity[] {
  return detectDetailed(text, options).map(({ type, start, end, confidence, detector }) => ({
    type,
    start,
    end,
    confidence,
    detector,
  }));
}
