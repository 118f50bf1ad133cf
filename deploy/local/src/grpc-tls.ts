import { readGrpcTransport } from '@gw/config';
import type { GrpcTransport } from '@gw/config';

/** Mutual TLS inside a stack: one certificate that every process presents, signed by the CA they all trust. */
export interface StackTls {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** The variables that give a process the stack's gRPC transport; no TLS: plaintext, said out loud. */
export function grpcTransportEnv(tls: StackTls | undefined): Record<string, string> {
  return tls === undefined
    ? { GRPC_INSECURE: 'true' }
    : { GRPC_TLS_CERT: tls.certFile, GRPC_TLS_KEY: tls.keyFile, GRPC_TLS_CA: tls.caFile };
}

/** The transport of the runner's own calls (health checks, seeding), read as the services read theirs. */
export function stackGrpcTransport(tls: StackTls | undefined): GrpcTransport {
  return readGrpcTransport(grpcTransportEnv(tls));
}
