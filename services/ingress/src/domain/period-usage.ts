/** An account's use of one model in a billing period. */
export interface ModelUsage {
  model: string;
  requests: number;
  billableTokens: number;
  /** Exact cost in pounds sterling, a decimal string (rounded at the edge). */
  costGbp: string;
}

export interface PeriodUsage {
  billableTokens: number;
  byModel: ModelUsage[];
}
