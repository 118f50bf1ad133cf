// The admin routes' import of the billing period and money rounding; the report is pipeline/usage-report.ts.
export { billingPeriod, roundGbp } from './domain/usage-report';
