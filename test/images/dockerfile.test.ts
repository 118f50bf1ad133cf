import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serviceNodeFlags, serviceNodeOptions } from '@gw/local-stack';
import type { GatewayServiceName } from '@gw/local-stack';

// The six images come from one Dockerfile, the service a build argument and a target of the same name
// (deploy/images/build.sh builds them; the images stage of `make test` and test/deploy/images-run.test.ts run
// them). What these tests keep true: a stage for every service and no other, no Dockerfile of a service's own,
// the compile stage the same for all six (so it is built once), and each service's Node options and command line
// the local stack's.

const repoRoot = join(__dirname, '..', '..');
const dockerfile = readFileSync(join(repoRoot, 'deploy', 'images', 'Dockerfile'), 'utf8');

interface Stage {
  name: string;
  from: string;
  lines: string[];
}

/** The stages of the Dockerfile, each with its instructions (comments out, continued lines joined). */
function stages(): Stage[] {
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const found: Stage[] = [];
  for (const instruction of instructions) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction);
    if (from) found.push({ from: from[1]!, name: from[2] ?? '', lines: [] });
    else found.at(-1)?.lines.push(instruction);
  }
  return found;
}

const services = readdirSync(join(repoRoot, 'services')).filter((name) =>
  existsSync(join(repoRoot, 'services', name, 'package.json')),
);
const buildScript = readFileSync(join(repoRoot, 'deploy', 'images', 'build.sh'), 'utf8');

test('every service has a final stage of its name on the runtime stage, and build.sh builds exactly those', () => {
  const finalStages = stages().filter((stage) => stage.from === 'runtime');
  expect(finalStages.map((stage) => stage.name).sort()).toEqual([...services].sort());
  const allServices = /^readonly ALL_SERVICES=\(([^)]*)\)$/m.exec(buildScript)?.[1]?.split(/\s+/) ?? [];
  expect(allServices.sort()).toEqual([...services].sort());
  expect(buildScript).toContain('--build-arg "SERVICE=$service" --target "$service"');
});

test('no service keeps a Dockerfile of its own', () => {
  expect(services.filter((service) => existsSync(join(repoRoot, 'services', service, 'Dockerfile')))).toEqual([]);
});

test('the compile stage does not read the service, so the six builds share its layers', () => {
  const build = stages().find((stage) => stage.name === 'build');
  expect(build).toBeDefined();
  expect(build!.lines.join('\n')).not.toMatch(/SERVICE/);
  // The service's own steps read it: the deploy of its package and the image's title.
  const deploy = stages().find((stage) => stage.name === 'deploy')!;
  expect(deploy.lines).toContain('ARG SERVICE');
  expect(deploy.lines.join('\n')).toContain('--filter "@gw/${SERVICE}" deploy');
  const runtime = stages().find((stage) => stage.name === 'runtime')!;
  expect(runtime.lines.join('\n')).toContain('org.opencontainers.image.title="inference-gateway-${SERVICE}"');
});

test("the services' images differ only by the Node options and flags the local stack gives each", () => {
  const entrypoint = (lines: string[]) =>
    lines.filter((line) => line.startsWith('ENTRYPOINT ')).map((line) => JSON.parse(line.slice(11)) as string[]);
  const runtime = stages().find((stage) => stage.name === 'runtime')!;
  expect(entrypoint(runtime.lines)).toEqual([['node', 'dist/main.js']]);
  for (const stage of stages().filter((candidate) => candidate.from === 'runtime')) {
    const service = stage.name as GatewayServiceName;
    expect(stage.lines.filter((line) => !line.startsWith('ENTRYPOINT '))).toEqual([
      `ENV NODE_OPTIONS=${serviceNodeOptions[service]}`,
    ]);
    const flags = serviceNodeFlags[service];
    expect(entrypoint(stage.lines)).toEqual(flags.length === 0 ? [] : [['node', ...flags, 'dist/main.js']]);
  }
});
