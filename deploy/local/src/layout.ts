import { join, resolve } from 'node:path';

/** The repository root, from deploy/local/dist. */
export const repoRoot = resolve(__dirname, '..', '..', '..');

export interface Ports {
  http: number;
  admin: number;
  grpc: { auth: number; policy: number; quota: number; router: number; metering: number };
  metrics: { ingress: number; auth: number; policy: number; quota: number; router: number; metering: number };
  /** One simulated upstream listener per local pool: Anthropic EU, Anthropic UK, OpenAI-compatible EU. */
  sim: { eu: number; uk: number; openaiEu: number; bedrockUk: number; bedrockEu: number; vertexEu: number };
  /** The local trace viewer (Jaeger): its OTLP/HTTP receiver, its UI and query API, its query gRPC. */
  traces: { otlpHttp: number; ui: number; uiGrpc: number };
}

/** The local ports of docs/conventions.md, shifted by an offset so that a second stack can run beside the first. */
export function portsWithOffset(offset: number): Ports {
  return {
    http: 8080 + offset,
    admin: 8081 + offset,
    grpc: {
      auth: 50051 + offset,
      policy: 50052 + offset,
      quota: 50053 + offset,
      router: 50054 + offset,
      metering: 50055 + offset,
    },
    metrics: {
      ingress: 9464 + offset,
      auth: 9465 + offset,
      policy: 9466 + offset,
      quota: 9467 + offset,
      router: 9468 + offset,
      metering: 9469 + offset,
    },
    sim: {
      eu: 9101 + offset,
      uk: 9102 + offset,
      openaiEu: 9103 + offset,
      bedrockUk: 9104 + offset,
      bedrockEu: 9105 + offset,
      vertexEu: 9106 + offset,
    },
    traces: { otlpHttp: 4318 + offset, ui: 16686 + offset, uiGrpc: 16685 + offset },
  };
}

/**
 * A whole port set in one block starting at `base`, for stacks that tests start beside a developer's.
 * Tests keep every port below 32768: above it lies the kernel's range for outgoing connections, whose
 * local ports would now and then collide with a server's bind.
 */
export function portsFromBase(base: number): Ports {
  return {
    http: base,
    admin: base + 1,
    grpc: { auth: base + 11, policy: base + 12, quota: base + 13, router: base + 14, metering: base + 15 },
    metrics: {
      ingress: base + 21,
      auth: base + 22,
      policy: base + 23,
      quota: base + 24,
      router: base + 25,
      metering: base + 26,
    },
    sim: {
      eu: base + 31,
      uk: base + 32,
      openaiEu: base + 33,
      bedrockUk: base + 34,
      bedrockEu: base + 35,
      vertexEu: base + 36,
    },
    traces: { otlpHttp: base + 41, ui: base + 42, uiGrpc: base + 43 },
  };
}

export interface StateDir {
  root: string;
  logs: string;
  run: string;
  infraEnv: string;
  secretsEnv: string;
  stackEnv: string;
}

export function stateDir(root: string): StateDir {
  return {
    root,
    logs: join(root, 'logs'),
    run: join(root, 'run'),
    infraEnv: join(root, 'infra.env'),
    secretsEnv: join(root, 'secrets.env'),
    stackEnv: join(root, 'stack.env'),
  };
}
