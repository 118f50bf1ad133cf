import {
  connectivityState as ConnectivityState,
  makeGenericClientConstructor,
  Metadata,
  status as GrpcStatus,
} from '@grpc/grpc-js';
import type { ChannelOptions, Client, ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { create } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import type { GrpcTransport } from '@gw/config';
import { err, ok } from '@gw/errors';
import type { GatewayError, Result } from '@gw/errors';
import { grpcServiceDefinition } from './definition';
import { errorDetailTrailer, fromGrpcError } from './error-detail';
import { requestIdMetadataKey, wellFormedRequestId } from './request-id';
import { injectTraceContext } from './tracing';
import { channelCredentials, transportChannelOptions } from './transport';
import type { CallOptions, ServiceClient } from './types';

export interface ClientOptions {
  /**
   * host:port of the service, or dns:///host:port to spread calls round robin over every address the
   * name resolves to (a Kubernetes headless Service resolves to one address per pod).
   */
  address: string;
  /** Name used in error messages, e.g. "auth". */
  callee: string;
  /** Deadline of a unary call that gives none; 0 or less means fallbackUnaryTimeoutMs, never no deadline. */
  defaultTimeoutMs: number;
  /** Largest message sent or received, in bytes; omitted: grpc-js's defaults (4 MiB received). */
  maxMessageBytes?: number;
  /** Mutual TLS, or plaintext: from the process's configuration (readGrpcTransport), never assumed. */
  transport: GrpcTransport;
  /**
   * Server-streaming calls that end UNAVAILABLE before their first message, with no answer of the
   * service's own (a pod that went away or refused the connection, no ready address while DNS catches up
   * after a rollout), are sent again once the channel has a ready connection: at most `attempts` in all,
   * waiting at most `readyWithinMs` each time. Only for methods that may run again when nothing came back.
   * Omitted: never sent again.
   */
  streamRetry?: StreamRetry;
}

export interface StreamRetry {
  attempts: number;
  readyWithinMs: number;
}

/**
 * Deadline of a unary call when neither the call nor its client gives one: the longest a gateway request
 * may take (the SDKs' own request timeout), so that a hung service never holds a caller for ever.
 */
export const fallbackUnaryTimeoutMs = 600_000;

/** Client pings: a connection whose peer vanished without closing it is noticed within 40 s. */
export const clientKeepaliveTimeMs = 30_000;

const isPositiveMs = (value: number | undefined): value is number =>
  value !== undefined && Number.isFinite(value) && value > 0;

/** When a unary call must have ended: the call's timeout, else the client's default, else the fallback. */
export function unaryDeadline(callOptions: CallOptions | undefined, defaultTimeoutMs: number, now = Date.now()): Date {
  const timeoutMs = [callOptions?.timeoutMs, defaultTimeoutMs].find(isPositiveMs) ?? fallbackUnaryTimeoutMs;
  return new Date(now + timeoutMs);
}

/** A server-streaming call (a completion) lives as long as its stream unless the call gives a timeout. */
function streamDeadline(callOptions: CallOptions | undefined): Date | undefined {
  const timeoutMs = callOptions?.timeoutMs;
  return isPositiveMs(timeoutMs) ? new Date(Date.now() + timeoutMs) : undefined;
}

// Targets that may resolve to several addresses; grpc-js's default policy (pick_first) would send every
// call to one of them. ipv4:/ipv6: address lists are grpc-js's own multi-address targets.
const multiAddressTarget = /^(dns|ipv4|ipv6):/;
const roundRobin = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/** The grpc-js channel options of a client: keepalive, message limits, load balancing and TLS server name. */
export function channelOptions(
  options: Pick<ClientOptions, 'address' | 'maxMessageBytes' | 'transport'>,
): ChannelOptions {
  return {
    ...transportChannelOptions(options.transport),
    'grpc.keepalive_time_ms': clientKeepaliveTimeMs,
    'grpc.keepalive_timeout_ms': 10_000,
    // Idle connections are pinged too, so that the first call after a quiet spell does not find a dead one.
    'grpc.keepalive_permit_without_calls': 1,
    // grpc-js backs off up to 120 s between reconnects by default: a service restarted (or started
    // after its caller) would stay unreachable that long. Retry within seconds instead.
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 5_000,
    ...(options.maxMessageBytes !== undefined && {
      'grpc.max_receive_message_length': options.maxMessageBytes,
      'grpc.max_send_message_length': options.maxMessageBytes,
    }),
    ...(multiAddressTarget.test(options.address) && { 'grpc.service_config': roundRobin }),
    // A pod that leaves (a rollout, a scale-in) sends GOAWAY and its callers ask DNS again; grpc-js waits
    // until 30 s after the previous answer by default, failing calls meanwhile if no other address is known.
    ...(options.address.startsWith('dns:') && { 'grpc.dns_min_time_between_resolutions_ms': 1_000 }),
  };
}

function callMetadata(callOptions: CallOptions | undefined): Metadata {
  const metadata = new Metadata();
  const requestId = wellFormedRequestId(callOptions?.requestId);
  if (requestId !== undefined) metadata.set(requestIdMetadataKey, requestId);
  injectTraceContext(metadata, callOptions?.traceContext);
  return metadata;
}

const cancelledBeforeSending = (callee: string): GatewayError => fromGrpcError({ code: GrpcStatus.CANCELLED }, callee);

type UntypedUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: Date },
  callback: (error: ServiceError | null, response: unknown) => void,
) => { cancel(): void };
type UntypedServerStream = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: Date },
) => ClientReadableStream<unknown>;

/**
 * A typed client whose calls return results instead of throwing: a refusal by the service and a
 * failure of the call both come back as a GatewayError value.
 */
export function createServiceClient<M extends GenServiceMethods>(
  service: GenService<M>,
  options: ClientOptions,
): ServiceClient<M> & { close(): void } {
  const Constructor = makeGenericClientConstructor(grpcServiceDefinition(service), service.typeName);
  const channel: Client = new Constructor(
    options.address,
    channelCredentials(options.transport),
    channelOptions(options),
  );
  const methods = channel as unknown as Record<string, UntypedUnary | UntypedServerStream>;
  const client: Record<string, unknown> = { close: () => channel.close() };

  for (const method of service.methods) {
    const invoke = methods[method.localName]!.bind(channel);
    if (method.methodKind === 'unary') {
      client[method.localName] = (request: unknown, callOptions?: CallOptions) => {
        const signal = callOptions?.signal;
        if (signal?.aborted) return Promise.resolve(err(cancelledBeforeSending(options.callee)));
        return new Promise<Result<MessageShape<DescMessage>>>((resolve) => {
          const cancel = () => call.cancel();
          const call = (invoke as UntypedUnary)(
            create(method.input, request as never),
            callMetadata(callOptions),
            { deadline: unaryDeadline(callOptions, options.defaultTimeoutMs) },
            (error, response) => {
              // The signal may outlive the call by far (one per connection, say): leave nothing on it.
              signal?.removeEventListener('abort', cancel);
              resolve(error ? err(fromGrpcError(error, options.callee)) : ok(response as MessageShape<DescMessage>));
            },
          );
          signal?.addEventListener('abort', cancel, { once: true });
        });
      };
    } else if (method.methodKind === 'server_streaming') {
      client[method.localName] = serverStreamingMethod(
        channel,
        invoke as UntypedServerStream,
        (request) => create(method.input, request as never),
        options,
      );
    }
  }
  return client as ServiceClient<M> & { close(): void };
}

/**
 * Resolves true once the channel has a ready connection (asking it to connect), false when `withinMs` or
 * the signal ends first. Its own timer, cleared either way: grpc-js's waitForReady keeps one to its deadline.
 */
export function channelReady(client: Client, withinMs: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  const channel = client.getChannel();
  return new Promise<boolean>((resolve) => {
    let settled = false;
    const finish = (ready: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      resolve(ready);
    };
    const stop = () => finish(false);
    const timer = setTimeout(stop, withinMs);
    signal?.addEventListener('abort', stop, { once: true });
    const check = () => {
      if (settled) return;
      const state = channel.getConnectivityState(true);
      if (state === ConnectivityState.READY) finish(true);
      else if (state === ConnectivityState.SHUTDOWN) finish(false);
      // No deadline of grpc-js's own (no timer left behind); a watcher outliving the wait returns at once.
      else channel.watchConnectivityState(state, Infinity, check);
    };
    check();
  });
}

/** UNAVAILABLE from the call itself (no error the service answered with): it may be sent again. */
const unavailableWithoutAnswer = (error: ServiceError) =>
  error.code === GrpcStatus.UNAVAILABLE && (error.metadata?.get(errorDetailTrailer).length ?? 0) === 0;

/**
 * A server-streaming method: its responses, then a failure as a value if it fails. With `streamRetry`, a
 * call that failed UNAVAILABLE before any response is sent again (same request, same deadline).
 */
function serverStreamingMethod(
  channel: Client,
  invoke: UntypedServerStream,
  message: (request: unknown) => unknown,
  options: ClientOptions,
) {
  const attempts = Math.max(1, options.streamRetry?.attempts ?? 1);
  return (request: unknown, callOptions?: CallOptions) =>
    (async function* () {
      const signal = callOptions?.signal;
      if (signal?.aborted) {
        yield err(cancelledBeforeSending(options.callee));
        return;
      }
      const deadline = streamDeadline(callOptions);
      const input = message(request);
      for (let attempt = 1; ; attempt += 1) {
        const call = invoke(input, callMetadata(callOptions), { deadline });
        const cancel = () => call.cancel();
        signal?.addEventListener('abort', cancel, { once: true });
        let answered = false;
        let failure: ServiceError;
        try {
          for await (const response of call) {
            answered = true;
            yield ok(response as MessageShape<DescMessage>);
          }
          return;
        } catch (error) {
          failure = error as ServiceError;
        } finally {
          signal?.removeEventListener('abort', cancel);
          call.cancel();
        }
        const again =
          !answered &&
          attempt < attempts &&
          unavailableWithoutAnswer(failure) &&
          (await channelReady(channel, readyWaitMs(options.streamRetry, deadline), signal));
        if (!again) {
          yield err(fromGrpcError(failure, options.callee));
          return;
        }
      }
    })();
}

/** How long a retry waits for a ready connection: the retry's bound, within the call's deadline. */
function readyWaitMs(retry: StreamRetry | undefined, deadline: Date | undefined): number {
  const bound = retry?.readyWithinMs ?? 0;
  return deadline === undefined ? bound : Math.max(0, Math.min(bound, deadline.getTime() - Date.now()));
}
