"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.Load = exports.model = void 0;
exports.sumBillable = sumBillable;
const promises_1 = require("node:timers/promises");
const sdk_1 = __importDefault(require("@anthropic-ai/sdk"));
exports.model = 'claude-sonnet-5';
const randomInt = (below) => Math.floor(Math.random() * below);
function failureKind(error) {
    if (error instanceof sdk_1.default.APIError && error.status !== undefined) {
        return `${error.status} ${error.type ?? error.constructor.name}`;
    }
    return error instanceof Error ? error.constructor.name : String(error);
}
/**
 * A bounded load of live requests through the official SDK (no retries), paced and with at most
 * `concurrency` in flight. Short messages of random length; the simulated upstream answers after a
 * random latency of up to 200 ms, so that requests are in flight whenever a fault strikes.
 */
class Load {
    options;
    issued = 0;
    completed = [];
    failures = {};
    sdk;
    constructor(options) {
        this.options = options;
        this.sdk = new sdk_1.default({ baseURL: options.baseUrl, apiKey: options.apiKey, maxRetries: 0, timeout: 30_000 });
    }
    async run() {
        const started = Date.now();
        const interval = 1_000 / this.options.ratePerSecond;
        const worker = async () => {
            for (;;) {
                const index = this.issued;
                if (index >= this.options.requests)
                    return;
                this.issued += 1;
                const due = started + index * interval;
                if (due > Date.now())
                    await (0, promises_1.setTimeout)(due - Date.now());
                await this.one();
            }
        };
        await Promise.all(Array.from({ length: this.options.concurrency }, worker));
        return {
            issued: this.issued,
            completed: [...this.completed],
            failures: { ...this.failures },
            durationMs: Date.now() - started,
        };
    }
    /** Resolves once this many requests have been issued (bounded by timeoutMs). */
    async whenIssued(count, timeoutMs = 60_000) {
        const deadline = Date.now() + timeoutMs;
        while (this.issued < count) {
            if (Date.now() > deadline)
                throw new Error(`load: only ${this.issued} of ${count} requests issued`);
            await (0, promises_1.setTimeout)(20);
        }
    }
    async one() {
        const words = Array.from({ length: 1 + randomInt(40) }, (_, index) => `word${index}`).join(' ');
        try {
            const { data: message, request_id: requestId } = await this.sdk.messages
                .create({
                model: exports.model,
                max_tokens: 8 + randomInt(120),
                messages: [{ role: 'user', content: `${words} sim:latency=${randomInt(200)}` }],
            })
                .withResponse();
            if (!requestId)
                throw new Error('a 200 response without a request id');
            const { usage } = message;
            if (usage.cache_read_input_tokens || usage.cache_creation_input_tokens) {
                throw new Error(`unexpected cache tokens from the simulator: ${JSON.stringify(usage)}`);
            }
            this.completed.push({ requestId, billableTokens: usage.input_tokens + usage.output_tokens });
        }
        catch (error) {
            if (error instanceof Error && error.message.startsWith('unexpected cache tokens'))
                throw error;
            const kind = failureKind(error);
            this.failures[kind] = (this.failures[kind] ?? 0) + 1;
        }
    }
}
exports.Load = Load;
function sumBillable(completed) {
    return completed.reduce((sum, request) => sum + request.billableTokens, 0);
}
