import { credentials, ServerCredentials } from '@grpc/grpc-js';
import type { ChannelCredentials, ChannelOptions } from '@grpc/grpc-js';
import type { GrpcTransport } from '@gw/config';

/**
 * What a server binds with. Under mutual TLS it asks every caller for a certificate and refuses the
 * handshake of one without a certificate signed by the trusted CA: such a caller never reaches a handler.
 */
export function serverCredentials(transport: GrpcTransport): ServerCredentials {
  if (transport.kind === 'plaintext') return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(
    transport.trustedCa,
    [{ cert_chain: transport.certificateChain, private_key: transport.privateKey }],
    true,
  );
}

/** What a client dials with: under mutual TLS it presents its certificate and verifies the server's. */
export function channelCredentials(transport: GrpcTransport): ChannelCredentials {
  if (transport.kind === 'plaintext') return credentials.createInsecure();
  return credentials.createSsl(transport.trustedCa, transport.privateKey, transport.certificateChain);
}

/** The server's certificate is checked against serverName, when given, instead of the dialled host. */
export function transportChannelOptions(transport: GrpcTransport): ChannelOptions {
  return transport.kind === 'mutualTls' && transport.serverName !== undefined
    ? { 'grpc.ssl_target_name_override': transport.serverName }
    : {};
}
