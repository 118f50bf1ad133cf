import type { PlanConfig } from '@gw/config';

/**
 * The body size limit of each plan: the plan's own where it is lower than the gateway's, else the
 * gateway's. Read per request; a reload of the gateway YAML replaces the plans' limits in place.
 */
export class PlanBodyLimits {
  private readonly byPlan = new Map<string, number>();

  constructor(
    private readonly gatewayLimitBytes: number,
    plans: readonly Pick<PlanConfig, 'id' | 'bodyLimitBytes'>[],
  ) {
    this.set(plans);
  }

  set(plans: readonly Pick<PlanConfig, 'id' | 'bodyLimitBytes'>[]): void {
    this.byPlan.clear();
    for (const plan of plans) {
      this.byPlan.set(plan.id, Math.min(plan.bodyLimitBytes ?? Infinity, this.gatewayLimitBytes));
    }
  }

  /** An unknown plan gets the gateway's limit. */
  limitFor(plan: string): number {
    return this.byPlan.get(plan) ?? this.gatewayLimitBytes;
  }
}
