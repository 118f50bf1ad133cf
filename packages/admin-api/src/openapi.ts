import { z } from 'zod';
import { errorCatalogue } from '@gw/errors';
import { errorEnvelope } from './resources';
import { commonErrors } from './route';
import type { AdminRoute } from './route';
import { adminApi } from './routes';

/**
 * The OpenAPI 3.1 document of the admin API, made from the route table (served at
 * GET /admin/v1/openapi.json and kept in docs/admin-api.openapi.json). Kept apart from the package's
 * index, which the dashboard bundles: the error catalogue it reads the statuses from is server code.
 */

type JsonSchema = Record<string, unknown>;

const componentRef = (id: string) => `#/components/schemas/${id}`;

/** A schema of the document: named parts go to components, referred to by `$ref`. */
function schemaOf(schema: z.ZodType, io: 'input' | 'output', components: Record<string, JsonSchema>): JsonSchema {
  const converted = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'throw' }) as JsonSchema;
  const { $schema: _dialect, $defs, ...rest } = converted;
  const rewritten = JSON.parse(
    JSON.stringify({ rest, $defs: $defs ?? {} }).replace(/"#\/\$defs\/([^"]+)"/g, (_whole, id: string) =>
      JSON.stringify(componentRef(id)),
    ),
  ) as { rest: JsonSchema; $defs: Record<string, JsonSchema> };
  Object.assign(components, rewritten.$defs);
  return rewritten.rest;
}

function parametersOf(route: AdminRoute, components: Record<string, JsonSchema>) {
  const path = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  if (!route.query) return path;
  const query = schemaOf(route.query, 'input', components) as {
    properties?: Record<string, JsonSchema>;
    required?: string[];
  };
  return [
    ...path,
    ...Object.entries(query.properties ?? {}).map(([name, schema]) => ({
      name,
      in: 'query',
      required: query.required?.includes(name) ?? false,
      schema,
    })),
  ];
}

/** The route's error types by HTTP status, from the one error catalogue. */
function errorResponses(route: AdminRoute) {
  const byStatus = new Map<number, string[]>();
  for (const type of new Set([...commonErrors, ...route.errors])) {
    const status = errorCatalogue[type].httpStatus;
    byStatus.set(status, [...(byStatus.get(status) ?? []), type]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, types]) => [
      String(status),
      {
        description: types.join(', '),
        content: { 'application/json': { schema: { $ref: componentRef('Error') } } },
      },
    ]),
  );
}

function operationOf(route: AdminRoute, components: Record<string, JsonSchema>) {
  const content: Record<string, unknown> = {
    'application/json': { schema: schemaOf(route.response, 'output', components) },
  };
  if (route.csv) content['text/csv'] = { schema: { type: 'string' } };
  return {
    operationId: route.name,
    summary: route.summary,
    description:
      route.who === 'operator' ? 'The operator token only.' : 'The operator, or an admin key of the account.',
    parameters: parametersOf(route, components),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: schemaOf(route.body, 'input', components) } },
          },
        }
      : {}),
    responses: { [String(route.status)]: { description: 'The answer.', content }, ...errorResponses(route) },
  };
}

export function openApiDocument() {
  const components: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of Object.values(adminApi) as AdminRoute[]) {
    const path = `/admin/v1${route.path}`;
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operationOf(route, components) };
  }
  schemaOf(errorEnvelope, 'output', components);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Inference gateway admin API',
      version: '1',
      description: 'Served by ingress on its admin port; see docs/admin-api.md.',
    },
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The operator token or an account admin key.' },
      },
    },
  };
}
