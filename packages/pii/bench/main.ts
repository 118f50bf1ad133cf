import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type * as Pii from '..';
import { PrivacyMode } from '@gw/vocabulary';
import { prng } from './prng';

/**
 * Privacy-mode benchmark: throughput (MB/s) and added latency (ms, p50/p99 over repetitions) of detect, redact
 * and tokenise + streaming restore on a realistic prompt of 10 KB and of 1 MB (prose, code, numbers, dates and
 * versions, with personal data every few hundred characters). Not a test: `make bench-pii` builds and runs it.
 * Settings: BENCH_PII_REPS_SMALL (300), BENCH_PII_REPS_LARGE (15), BENCH_PII_CHUNK (16, characters per streamed
 * delta given to the restorer).
 */

// The package as built by `tsc -b packages/pii` (this file compiles to bench/dist/main.js).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const pii = require(join(__dirname, '..', '..')) as typeof Pii;

const print = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[1-9][0-9]*$/.test(raw)) {
    process.stderr.write(`${name}: expected a positive integer, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return Number(raw);
}

const REPS_SMALL = positiveInt('BENCH_PII_REPS_SMALL', 300);
const REPS_LARGE = positiveInt('BENCH_PII_REPS_LARGE', 15);
const CHUNK = positiveInt('BENCH_PII_CHUNK', 16);

const PROSE = [
  'Could you summarise the attached quarterly report for the board? Revenue grew 12% in Q3 2024, mostly in the UK and Germany.',
  'The migration to version 2.4.1 finished on 2024-03-18 at 10:30 UTC; 3 of 47 services needed a restart.',
  'Please rewrite this paragraph in plain English, keeping the tone friendly but professional.',
  'Our SLA promises 99.95% availability, measured monthly, excluding planned maintenance announced 7 days ahead.',
  'Order 1184302 shipped on 12 March; the invoice INV-2024-0071 is attached, total £1,249.50 including VAT.',
  'The function below returns the median of a list; can you make it handle empty input and add type hints?',
  '```python\ndef median(xs):\n    xs = sorted(xs)\n    return xs[len(xs) // 2]\n```',
  'Section 4.2.1 of the contract says either party may terminate with 30 days written notice.',
  'We saw 1.5 million requests per day in February, peaking at 2,300 per second during the product launch.',
  'Translate the following into French and German: "Your appointment is confirmed for Tuesday."',
  'Timestamps in the log look like 1714032000 and request ids like req_8f3a2c91; nothing else stands out.',
  'The team agreed to revisit the roadmap after the release of 3.0 and the security review.',
];

function personal(random: () => number): string {
  const nhs = ['943 476 5919', '401 023 2137'];
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  return pick([
    `You can reach Jane Doe at jane.doe${Math.floor(random() * 1000)}@example.co.uk or on 020 7946 0${String(Math.floor(random() * 1000)).padStart(3, '0')}.`,
    `The patient's NHS number is ${pick(nhs)} and she was born on 12/03/1980.`,
    `Refund to IBAN GB82 WEST 1234 5698 7654 32, or the card 4111 1111 1111 1111 if that fails.`,
    `His National Insurance number is AB 12 34 56 C; he lives at 10 Downing Street, London SW1A 2AA.`,
    `The login came from 81.2.69.160 and later from 2001:db8::8a2e:370:7334.`,
    `Ihre Steuer-ID lautet 86095742719, Telefon +49 30 1234567.`,
    `Numéro de sécurité sociale : 1 84 03 12 765 432 15, téléphone 06 12 34 56 78.`,
    `DNI 12345678Z, codice fiscale RSSMRA85T10A562S, BSN 111222333, PESEL 44051401359.`,
    `Passport number 123456789, expires 2031.`,
  ]);
}

/** A realistic prompt of `size` characters: mostly prose and code, personal data in about one sentence in five. */
function corpus(size: number, seed: number): string {
  const random = prng(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < size) {
    const sentence = random() < 0.2 ? personal(random) : PROSE[Math.floor(random() * PROSE.length)]!;
    parts.push(sentence);
    length += sentence.length + 1;
  }
  return parts.join(random() < 0.5 ? ' ' : '\n').slice(0, size);
}

interface Result {
  readonly operation: string;
  readonly size: string;
  readonly bytes: number;
  readonly samples: Float64Array;
}

function nearestRank(sorted: Float64Array, percentile: number): number {
  const rank = Math.max(1, Math.ceil((percentile / 100) * sorted.length));
  return sorted[rank - 1]!;
}

function run(operation: string, size: string, text: string, reps: number, body: () => void): Result {
  // Warm-up (JIT, regex compilation, phone metadata): a sixth of the repetitions, at least two.
  for (let warm = 0; warm < Math.max(2, Math.ceil(reps / 6)); warm += 1) body();
  const samples = new Float64Array(reps);
  for (let index = 0; index < reps; index += 1) {
    const started = performance.now();
    body();
    samples[index] = performance.now() - started;
  }
  return { operation, size, bytes: Buffer.byteLength(text, 'utf8'), samples };
}

function streamRestore(text: string, map: Pii.TokenMap, nonce: string): string {
  const restorer = pii.createRestorer(map, nonce);
  let output = '';
  for (let index = 0; index < text.length; index += CHUNK) output += restorer.push(text.slice(index, index + CHUNK));
  return output + restorer.flush();
}

function main(): void {
  const results: Result[] = [];
  const cases: ReadonlyArray<readonly [string, number, number]> = [
    ['10 KB', 10_000, REPS_SMALL],
    ['1 MB', 1_000_000, REPS_LARGE],
  ];
  for (const [label, size, reps] of cases) {
    const text = corpus(size, 42);
    const entities = pii.detect(text);
    const counts = pii.countByType([text]);
    print(
      `corpus ${label}: ${text.length} characters, ${entities.length} entities ` +
        `(${Object.entries(counts)
          .map(([type, count]) => `${type} ${count}`)
          .join(', ')})`,
    );
    const nonce = pii.createNonce();
    const tokenised = pii.tokenise([text], nonce);
    if (streamRestore(tokenised.texts[0]!, tokenised.map, nonce) !== text) {
      process.stderr.write('tokenise → restore did not give back the text\n');
      process.exit(1);
    }
    results.push(run('detect', label, text, reps, () => void pii.detect(text)));
    results.push(run(PrivacyMode.redact, label, text, reps, () => void pii.redact([text])));
    results.push(
      run(PrivacyMode.tokenise, label, text, reps, () => void pii.tokenise([text], nonce)),
      run(`restore (stream, ${CHUNK}-char deltas)`, label, text, reps, () => {
        void streamRestore(tokenised.texts[0]!, tokenised.map, nonce);
      }),
      run('tokenise + restore', label, text, reps, () => {
        const round = pii.tokenise([text], nonce);
        void streamRestore(round.texts[0]!, round.map, nonce);
      }),
    );
  }
  print('');
  print(
    `${'operation'.padEnd(34)}${'size'.padStart(7)}${'reps'.padStart(6)}${'MB/s'.padStart(9)}` +
      `${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'max ms'.padStart(10)}`,
  );
  for (const result of results) {
    const sorted = Float64Array.from(result.samples).sort();
    const p50 = nearestRank(sorted, 50);
    const megabytesPerSecond = result.bytes / 1e6 / (p50 / 1000);
    print(
      `${result.operation.padEnd(34)}${result.size.padStart(7)}${String(sorted.length).padStart(6)}` +
        `${megabytesPerSecond.toFixed(1).padStart(9)}${p50.toFixed(3).padStart(10)}` +
        `${nearestRank(sorted, 99).toFixed(3).padStart(10)}${sorted[sorted.length - 1]!.toFixed(3).padStart(10)}`,
    );
  }
  print('');
  print('MB/s: UTF-8 megabytes of prompt per second at the median. Latency is what the mode adds to a request of');
  print('that size on this machine, single-threaded; compare runs on the same machine only.');
}

main();
