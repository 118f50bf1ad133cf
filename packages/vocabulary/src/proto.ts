import { commonv1 } from '@gw/proto';
import type { KeyEnvironment, PrivacyMode, ResidencyTier } from './index';

// The proto enums of gateway.common.v1 and the words they stand for. Decoding answers undefined for
// UNSPECIFIED or a number this build does not know, so that each caller fails closed in its own way.

const { Residency, PrivacyMode: PrivacyModeEnum, Environment } = commonv1;

const residencyEnums = { uk: Residency.UK, eu: Residency.EU } as const satisfies Record<
  ResidencyTier,
  commonv1.Residency
>;
const privacyModeEnums = {
  off: PrivacyModeEnum.OFF,
  flag: PrivacyModeEnum.FLAG,
  redact: PrivacyModeEnum.REDACT,
  tokenise: PrivacyModeEnum.TOKENISE,
} as const satisfies Record<PrivacyMode, commonv1.PrivacyMode>;
const environmentEnums = { live: Environment.LIVE, test: Environment.TEST } as const satisfies Record<
  KeyEnvironment,
  commonv1.Environment
>;

const inverse = <Word extends string, Enum extends number>(enums: Record<Word, Enum>) =>
  new Map<number, Word>(Object.entries(enums).map(([word, value]) => [value as Enum, word as Word]));

const residencyWords = inverse(residencyEnums);
const privacyModeWords = inverse(privacyModeEnums);
const environmentWords = inverse(environmentEnums);

export const residencyToProto = (tier: ResidencyTier): commonv1.Residency => residencyEnums[tier];
export const residencyFromProto = (value: commonv1.Residency): ResidencyTier | undefined => residencyWords.get(value);

export const privacyModeToProto = (mode: PrivacyMode): commonv1.PrivacyMode => privacyModeEnums[mode];
export const privacyModeFromProto = (value: commonv1.PrivacyMode): PrivacyMode | undefined =>
  privacyModeWords.get(value);

export const environmentToProto = (environment: KeyEnvironment): commonv1.Environment => environmentEnums[environment];
export const environmentFromProto = (value: commonv1.Environment): KeyEnvironment | undefined =>
  environmentWords.get(value);
