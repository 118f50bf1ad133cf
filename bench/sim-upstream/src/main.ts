#!/usr/bin/env node
import { SimAwsIdentities } from './bedrock/sts';
import { defaultSimAws, startSimUpstream } from './server';
import type { RunningSimUpstream } from './server';

/**
 * One listener per port of SIM_PORTS on SIM_HOST, each speaking every protocol; SIM_API_KEY, when
 * set, is required (`x-api-key`, or `Authorization: Bearer` for chat completions).
 */
function readPorts(value: string): number[] | undefined {
  const ports = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0)
    .map(Number);
  const valid = ports.length > 0 && ports.every((port) => Number.isInteger(port) && port >= 0 && port <= 65535);
  return valid ? ports : undefined;
}

async function main(): Promise<void> {
  const host = process.env.SIM_HOST || '127.0.0.1';
  const ports = readPorts(process.env.SIM_PORTS || '9101,9102,9103');
  if (ports === undefined) {
    process.stderr.write(
      `invalid configuration: SIM_PORTS: expected a comma list of port numbers (got ${JSON.stringify(process.env.SIM_PORTS)})\n`,
    );
    process.exit(2);
  }
  const apiKey = process.env.SIM_API_KEY || undefined;
  // The AWS region each listener's Bedrock routes verify signatures for, by position; eu-west-2 unset.
  const awsRegions = (process.env.SIM_AWS_REGIONS ?? '').split(',').map((region) => region.trim());
  // One simulated STS for the process: credentials it issues on any listener are good on every one.
  const stsSeconds = Number(process.env.SIM_STS_CREDENTIAL_SECONDS || 3600);
  if (!Number.isSafeInteger(stsSeconds) || stsSeconds <= 0) {
    process.stderr.write('invalid configuration: SIM_STS_CREDENTIAL_SECONDS: expected a positive integer\n');
    process.exit(2);
  }
  const awsIdentities = new SimAwsIdentities(stsSeconds);
  const listeners: RunningSimUpstream[] = [];
  for (const [index, port] of ports.entries()) {
    const aws = { ...defaultSimAws, region: awsRegions[index] || defaultSimAws.region };
    const listener = await startSimUpstream({ host, port, apiKey, aws, awsIdentities });
    listeners.push(listener);
    process.stdout.write(`${JSON.stringify({ msg: 'sim-upstream listening', url: listener.url })}\n`);
  }
  const stop = () => {
    Promise.all(listeners.map((listener) => listener.close())).then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`sim-upstream failed to start: ${(error as Error).message}\n`);
  process.exit(1);
});
