import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Client, Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import type { ClientDuplexStream, MethodDefinition, StatusObject } from '@grpc/grpc-js';
import { create, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { commonv1 } from '@gw/proto';
import { traceparentOf } from '@gw/telemetry';
import type { Result } from '@gw/errors';
import { channelOptions, channelReady, unaryDeadline } from './client';
import type { ClientOptions } from './client';
import { grpcServiceDefinition } from './definition';
import { FrameOutbox, isMultiplexedStream } from './multiplexed';
import { StreamingClientCall, UnaryClientCall } from './multiplexed-calls';
import type { CallLine, CallPlacer, CallRequest, ClientCall } from './multiplexed-calls';
import { wellFormedRequestId } from './request-id';
import { channelCredentials } from './transport';
import type { CallOptions, ServiceClient } from './types';

export interface MultiplexedStreams {
  /** Streams kept to each address of the service (calls go to the least loaded of them all). */
  perAddress: number;
  /**
   * For a dns:/// address: how often the name is resolved again, so that pods that came are used and
   * pods that left are let go. 0: the name is one address, as grpc-js resolves it.
   */
  resolveEveryMs: number;
  /** The name's addresses (IPv4 or IPv6); default: the system resolver (getaddrinfo, as grpc-js uses). */
  lookupAddresses?: (host: string) => Promise<string[]>;
}

const systemLookup = async (host: string) => (await lookup(host, { all: true })).map(({ address }) => address);

export interface MultiplexedClientOptions extends ClientOptions {
  /**
   * Calls awaiting their end at most (default 4096); one more fails at once with overloaded_error,
   * so a service that stops answering cannot make the caller hold ever more.
   */
  maxPendingCalls?: number;
  /** Default: one stream, to the address as grpc-js resolves it. */
  streams?: MultiplexedStreams;
  /** Reply messages a server-streaming call may have unread (default 16). */
  streamWindow?: number;
  /**
   * A client of the same service making a call each, for a service of an older build that has no `Calls`
   * stream (a rolling upgrade): a call its stream refused as unimplemented goes there, and so does every
   * call for the next 30 s.
   */
  fallback?: Record<string, unknown>;
}

/** How long calls go to the fallback after a service answered that it has no `Calls` stream. */
const streamMissingMs = 30_000;

/** The unary and server-streaming methods of a service, called over its multiplexed streams. */
export type MultiplexedClient<M extends GenServiceMethods> = ServiceClient<M> & {
  /** Closes the caller's side of every stream (the service still answers what it holds), then the channels. */
  close(): void;
  /** Calls in flight on each open stream, by address: for tests and metrics. */
  load(): Record<string, number[]>;
};

/** Names the service's methods when it has no multiplexed stream, making the call a type error. */
type WithMultiplexedStream<M extends GenServiceMethods> = [
  {
    [K in keyof M]: M[K] extends { methodKind: 'bidi_streaming'; input: typeof commonv1.MultiplexedCallSchema }
      ? K
      : never;
  }[keyof M],
] extends [never]
  ? { serviceWithoutMultiplexedCallsStream: never }
  : unknown;

export const defaultMaxPendingCalls = 4096;
export const defaultStreamWindow = 16;
/** How long an address that broke a stream or drained is passed over while another can take calls. */
const addressRestMs = 1_000;
/** How long a call that lost its stream waits for a ready connection before its next try. */
const readyWithinMs = 3_000;

type UntypedUnary = (request: unknown, options?: CallOptions) => Promise<Result<MessageShape<DescMessage>>>;
type UntypedStream = (request: unknown, options?: CallOptions) => AsyncIterable<Result<MessageShape<DescMessage>>>;
type CallStream = ClientDuplexStream<commonv1.MultiplexedCall, commonv1.MultiplexedReply>;
type StreamDefinition = MethodDefinition<commonv1.MultiplexedCall, commonv1.MultiplexedReply>;

/** One bidi stream and the calls on it. */
class Line implements CallLine {
  readonly calls = new Map<bigint, ClientCall>();
  /** The service said it is stopping: no new call goes here. */
  draining = false;
  private sideClosed = false;
  private readonly stream: CallStream;
  private readonly outbox: FrameOutbox<commonv1.MultiplexedCall>;

  constructor(
    readonly address: Address,
    definition: StreamDefinition,
    private readonly ended: (line: Line, status: StatusObject) => void,
  ) {
    this.stream = address.channel.makeBidiStreamRequest(
      definition.path,
      definition.requestSerialize,
      definition.responseDeserialize,
      new Metadata(),
    );
    this.outbox = new FrameOutbox(this.stream);
    this.stream.on('data', (reply: commonv1.MultiplexedReply) => this.answer(reply));
    // A failed stream emits 'error', then 'status'; the status alone decides.
    this.stream.on('error', () => undefined);
    this.stream.on('status', (status: StatusObject) => this.streamEnded(status));
  }

  send(call: ClientCall): void {
    this.calls.set(call.callId, call);
    call.line = this;
    void this.outbox.send(call.callId, call.frames());
  }

  control(frame: commonv1.MultiplexedCall): void {
    this.outbox.sendNow(frame);
  }

  forget(callId: bigint): void {
    this.calls.delete(callId);
    this.outbox.drop(callId);
    this.endIfDrained();
  }

  /** Closes the caller's side once its queued frames went: the service answers what it holds, then ends. */
  close(): void {
    if (this.sideClosed) return;
    this.sideClosed = true;
    this.outbox.whenIdle(() => this.stream.end());
  }

  private answer(reply: commonv1.MultiplexedReply): void {
    if (reply.draining) {
      this.draining = true;
      this.address.restUntil = Date.now() + addressRestMs;
      this.endIfDrained();
      return;
    }
    const call = this.calls.get(reply.callId);
    if (!call) return; // given up on (deadline, abort): answered by no one
    if (reply.refused) {
      this.draining = true;
      this.forget(call.callId);
      call.onLost('refused');
    } else call.onReply(reply);
  }

  private endIfDrained(): void {
    if (this.draining && this.calls.size === 0) this.close();
  }

  private streamEnded(status: StatusObject): void {
    this.outbox.close();
    this.draining = true;
    this.ended(this, status);
    const lost = [...this.calls.values()];
    this.calls.clear();
    for (const call of lost) call.onLost(status.code === GrpcStatus.OK ? 'ended' : 'broken', status);
  }
}

/** One address of the service: its channel and the streams open to it. */
interface Address {
  target: string;
  channel: Client;
  lines: Line[];
  /** Passed over until then while another address can take calls. */
  restUntil: number;
  /** No longer resolved: its channel closes once its last stream ended. */
  gone: boolean;
}

/** dns:///host:port split, when calls are spread over the addresses the name resolves to. */
function resolvedName(address: string, streams: MultiplexedStreams): { host: string; port: string } | undefined {
  const match = /^dns:\/\/\/(.+):(\d+)$/.exec(address);
  if (!match || streams.resolveEveryMs <= 0 || isIP(match[1]!.replace(/^\[|\]$/g, ''))) return undefined;
  return { host: match[1]!, port: match[2]! };
}

/**
 * The streams of a client, over the service's addresses: each new call goes to the least-loaded stream
 * that takes calls, opening streams up to `perAddress` per address. A call refused by a stopping service,
 * or left without its end by a stream that ended or broke before answering it, goes to another stream.
 */
class LinePool implements CallPlacer {
  private readonly addresses = new Map<string, Address>();
  private nextCallId = 1n;
  private pending = 0;
  private closed = false;
  private resolveTimer: NodeJS.Timeout | undefined;
  private readonly resolvedOnce: Promise<void>;

  constructor(
    private readonly definition: StreamDefinition,
    private readonly options: MultiplexedClientOptions,
    private readonly streams: MultiplexedStreams,
  ) {
    const name = resolvedName(options.address, streams);
    if (!name) {
      this.setAddresses([options.address]);
      this.resolvedOnce = Promise.resolve();
    } else {
      this.resolvedOnce = this.resolve(name);
    }
  }

  get callee(): string {
    return this.options.callee;
  }

  newCallId(): bigint {
    const callId = this.nextCallId;
    this.nextCallId += 1n;
    return callId;
  }

  /** Takes a new call, or fails it at once (cancelled, closed, too many pending). */
  async admit(call: ClientCall): Promise<void> {
    if (this.closed) return call.fail(GrpcStatus.UNAVAILABLE);
    if (this.pending >= (this.options.maxPendingCalls ?? defaultMaxPendingCalls)) {
      return call.fail(GrpcStatus.RESOURCE_EXHAUSTED);
    }
    if (!call.start()) return;
    this.pending += 1;
    call.counted = true;
    await this.resolvedOnce;
    this.place(call, false);
  }

  release(): void {
    this.pending -= 1;
  }

  place(call: ClientCall, afterBreak: boolean): void {
    if (call.done) return;
    if (this.closed) return call.fail(GrpcStatus.UNAVAILABLE);
    call.placements += 1;
    const line = this.leastLoaded();
    if (!afterBreak) return line.send(call);
    // The stream broke: wait for a connection (a pod restarting, DNS catching up) within the deadline.
    const bound = this.options.streamRetry?.readyWithinMs ?? readyWithinMs;
    const within = Math.min(bound, call.request.deadline ? call.request.deadline - Date.now() : bound);
    void channelReady(line.address.channel, Math.max(0, within), call.request.signal).then((ready) => {
      if (call.done) return;
      if (ready) this.leastLoaded().send(call);
      else call.fail(GrpcStatus.UNAVAILABLE);
    });
  }

  load(): Record<string, number[]> {
    return Object.fromEntries(
      [...this.addresses.values()].map((address) => [address.target, address.lines.map((line) => line.calls.size)]),
    );
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.resolveTimer);
    for (const address of this.addresses.values()) {
      for (const line of address.lines) line.close();
      address.channel.close();
    }
  }

  /** The stream for a new call: the least loaded that takes calls, or a new one where there is room. */
  private leastLoaded(): Line {
    const now = Date.now();
    const all = [...this.addresses.values()].filter((address) => !address.gone);
    const rested = all.filter((address) => address.restUntil <= now);
    const candidates = rested.length > 0 ? rested : all.length > 0 ? all : [...this.addresses.values()];
    let best: Line | undefined;
    let room: Address | undefined;
    for (const address of candidates) {
      const open = address.lines.filter((line) => !line.draining);
      if (open.length < this.streams.perAddress && (!room || address.lines.length < room.lines.length)) {
        room = address;
      }
      for (const line of open) if (!best || line.calls.size < best.calls.size) best = line;
    }
    if (best && (best.calls.size === 0 || !room)) return best;
    return this.open(room ?? candidates[0]!);
  }

  private open(address: Address): Line {
    const line = new Line(address, this.definition, (ended, status) => {
      address.lines = address.lines.filter((other) => other !== ended);
      if (status.code !== GrpcStatus.OK) address.restUntil = Date.now() + addressRestMs;
      this.closeIfGone(address);
    });
    address.lines.push(line);
    return line;
  }

  private setAddresses(targets: string[]): void {
    const wanted = new Set(targets);
    for (const target of wanted) {
      const known = this.addresses.get(target);
      if (known) known.gone = false;
      else this.addresses.set(target, this.newAddress(target));
    }
    for (const address of this.addresses.values()) {
      if (wanted.has(address.target) || address.gone) continue;
      // Gone from the name: its streams take no new call, finish theirs and end.
      address.gone = true;
      for (const line of address.lines) {
        line.draining = true;
        if (line.calls.size === 0) line.close();
      }
      this.closeIfGone(address);
    }
  }

  private newAddress(target: string): Address {
    const name = resolvedName(this.options.address, this.streams);
    const configured = this.options.transport;
    // A pod's own address: its certificate names the service, not the address.
    const transport =
      name && configured.kind === 'mutualTls'
        ? { ...configured, serverName: configured.serverName ?? name.host }
        : configured;
    const channel = new Client(
      target,
      channelCredentials(transport),
      channelOptions({ ...this.options, address: target, transport }),
    );
    return { target, channel, lines: [], restUntil: 0, gone: false };
  }

  private closeIfGone(address: Address): void {
    if (!address.gone || address.lines.length > 0) return;
    address.channel.close();
    this.addresses.delete(address.target);
  }

  private async resolve(name: { host: string; port: string }): Promise<void> {
    try {
      const found = await (this.streams.lookupAddresses ?? systemLookup)(name.host);
      const targets = found.map((address) =>
        isIP(address) === 6 ? `ipv6:[${address}]:${name.port}` : `ipv4:${address}:${name.port}`,
      );
      if (targets.length > 0) this.setAddresses(targets);
    } catch {
      // Keep what was resolved before; with nothing yet, the name itself (grpc-js resolves it).
    }
    if (this.addresses.size === 0) this.setAddresses([this.options.address]);
    if (this.closed) return;
    this.resolveTimer = setTimeout(() => void this.resolve(name), this.streams.resolveEveryMs);
    this.resolveTimer.unref();
  }
}

function callRequest(
  pool: LinePool,
  method: DescMethod,
  request: unknown,
  callOptions: CallOptions | undefined,
  deadline: number | undefined,
  window: number,
): CallRequest {
  return {
    callId: pool.newCallId(),
    method,
    requestBytes: toBinary(method.input, create(method.input, request as never)),
    requestId: wellFormedRequestId(callOptions?.requestId) ?? '',
    // The calling span's context, so that the service's span of this call joins its trace.
    traceparent: traceparentOf(callOptions?.traceContext) ?? '',
    deadline,
    window,
    signal: callOptions?.signal,
  };
}

/**
 * A typed client of a service's unary and server-streaming methods, with the same calls and results as
 * createServiceClient's, that sends them all as frames on long-lived `Calls` streams instead of a call
 * each. A stream is opened when a call needs it; each call keeps its own deadline, abort signal and (when
 * server-streaming) flow control. When a stream breaks, the calls it carried fail as on a broken channel
 * (overloaded_error for an unavailable service), except server-streaming calls that got nothing back
 * yet and may run again (`streamRetry` set): those go to another stream.
 */
export function createMultiplexedClient<M extends GenServiceMethods>(
  service: GenService<M> & WithMultiplexedStream<M>,
  options: MultiplexedClientOptions,
): MultiplexedClient<M> {
  const streamMethod = service.methods.find(isMultiplexedStream);
  if (!streamMethod) throw new Error(`${service.typeName} has no multiplexed Calls stream`);
  const definition = grpcServiceDefinition(service)[streamMethod.localName] as StreamDefinition;
  const pool = new LinePool(definition, options, options.streams ?? { perAddress: 1, resolveEveryMs: 0 });
  const window = options.streamWindow ?? defaultStreamWindow;
  const fallback = options.fallback;
  let streamMissingUntil = 0;
  const useFallback = (call?: ClientCall) => {
    if (call?.streamMissing) streamMissingUntil = Date.now() + streamMissingMs;
    return fallback !== undefined && (call?.streamMissing || streamMissingUntil > Date.now());
  };
  const close = () => {
    pool.close();
    (fallback?.close as (() => void) | undefined)?.();
  };
  const client: Record<string, unknown> = { close, load: () => pool.load() };
  for (const method of service.methods) {
    if (method.methodKind === 'unary') {
      const viaFallback = fallback?.[method.localName] as UntypedUnary | undefined;
      client[method.localName] = async (request: unknown, callOptions?: CallOptions) => {
        if (useFallback()) return viaFallback!(request, callOptions);
        const deadline = unaryDeadline(callOptions, options.defaultTimeoutMs).getTime();
        const call = new UnaryClientCall(callRequest(pool, method, request, callOptions, deadline, 0), pool);
        void pool.admit(call);
        const result = await call.result;
        if (call.counted) pool.release();
        return useFallback(call) ? viaFallback!(request, callOptions) : result;
      };
    } else if (method.methodKind === 'server_streaming') {
      const moveAfterBreak = (options.streamRetry?.attempts ?? 1) > 1;
      const viaFallback = fallback?.[method.localName] as UntypedStream | undefined;
      client[method.localName] = (request: unknown, callOptions?: CallOptions) =>
        (async function* (): AsyncGenerator<Result<MessageShape<DescMessage>>> {
          if (useFallback()) return yield* viaFallback!(request, callOptions);
          const timeoutMs = callOptions?.timeoutMs;
          const deadline = timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
          const call = new StreamingClientCall(
            callRequest(pool, method, request, callOptions, deadline, window),
            pool,
            moveAfterBreak,
          );
          await pool.admit(call);
          try {
            for await (const item of call.messages()) {
              // Refused as unimplemented before anything came back: the fallback makes the call instead.
              if (!item.ok && useFallback(call)) return yield* viaFallback!(request, callOptions);
              yield item;
            }
          } finally {
            if (call.counted) pool.release();
          }
        })();
    }
  }
  return client as MultiplexedClient<M>;
}
