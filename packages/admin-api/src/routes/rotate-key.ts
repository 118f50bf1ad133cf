import { z } from 'zod';
import { rotatedKey } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const rotateKey = defineRoute({
  ...endpoints.rotateKey,
  summary: `A new key with the old one's settings, made in one operation; both work until the old one is revoked.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: undefined,
  body: undefined,
  status: 201,
  response: rotatedKey,
  errors: ['invalid_request_error', 'not_found_error'],
});
