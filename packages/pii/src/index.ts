export { DEFAULT_THRESHOLDS, detect } from './detect';
export { normalise, toOriginal, type Normalised } from './normalise';
export { createNonce, isPlaceholderPrefix, maxPlaceholderLength, placeholder } from './placeholder';
export { createRestorer, jsonEscape, restoreAll, type RestoreOptions, type Restorer, type TokenMap } from './restore';
export { countByType, redact, tokenise, type RedactResult, type TextsOptions, type TokeniseResult } from './transform';
export {
  DETECTOR_IDS,
  DETECTOR_TYPES,
  ENTITY_TYPES,
  type Counts,
  type DetectOptions,
  type DetectorId,
  type Entity,
  type EntityType,
} from './types';
