/** The entity types the gateway reports, redacts and tokenises. Placeholders carry these names. */
export const ENTITY_TYPES = [
  'EMAIL',
  'PHONE',
  'CARD',
  'IBAN',
  'UK_NINO',
  'NHS_NUMBER',
  'UK_POSTCODE',
  'IP_ADDRESS',
  'DATE_OF_BIRTH',
  'PASSPORT',
  'NATIONAL_ID',
] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

/** One detector per rule; several detectors can report the same entity type (NATIONAL_ID, IP_ADDRESS). */
export const DETECTOR_IDS = [
  'email',
  'phone',
  'card',
  'iban',
  'uk_nino',
  'nhs',
  'uk_postcode',
  'ipv4',
  'ipv6',
  'dob',
  'passport',
  'de_steuer_id',
  'fr_nir',
  'es_dni',
  'es_nie',
  'it_codice_fiscale',
  'nl_bsn',
  'pl_pesel',
] as const;
export type DetectorId = (typeof DETECTOR_IDS)[number];

/** The entity type each detector reports. */
export const DETECTOR_TYPES: Readonly<Record<DetectorId, EntityType>> = {
  email: 'EMAIL',
  phone: 'PHONE',
  card: 'CARD',
  iban: 'IBAN',
  uk_nino: 'UK_NINO',
  nhs: 'NHS_NUMBER',
  uk_postcode: 'UK_POSTCODE',
  ipv4: 'IP_ADDRESS',
  ipv6: 'IP_ADDRESS',
  dob: 'DATE_OF_BIRTH',
  passport: 'PASSPORT',
  de_steuer_id: 'NATIONAL_ID',
  fr_nir: 'NATIONAL_ID',
  es_dni: 'NATIONAL_ID',
  es_nie: 'NATIONAL_ID',
  it_codice_fiscale: 'NATIONAL_ID',
  nl_bsn: 'NATIONAL_ID',
  pl_pesel: 'NATIONAL_ID',
};

/** A detected value: offsets are UTF-16 code units in the ORIGINAL text, `end` exclusive. */
export interface Entity {
  readonly type: EntityType;
  readonly start: number;
  readonly end: number;
  /** 0..1 after checksum and context scoring. */
  readonly confidence: number;
  /** The rule that won the span (for metrics and debugging; never the value). */
  readonly detector: DetectorId;
}

export interface DetectOptions {
  /** Per-detector minimum confidence; the defaults are in DEFAULT_THRESHOLDS. */
  readonly thresholds?: Partial<Record<DetectorId, number>>;
  /** Only these entity types (default: all). */
  readonly types?: readonly EntityType[];
  /** The time of the request (default: the clock when detection runs): a date after its day is no date of birth. */
  readonly now?: Date;
}

export type Counts = Partial<Record<EntityType, number>>;
