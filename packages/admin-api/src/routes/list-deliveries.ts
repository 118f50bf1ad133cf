import { z } from 'zod';
import { deliveriesQuery } from '../requests';
import { deliveryList } from '../resources';
import { endpoints } from '../endpoints';
import { defineRoute } from '../route';

export const listDeliveries = defineRoute({
  ...endpoints.listDeliveries,
  summary: `The endpoint's delivery log, newest first.`,
  who: 'both',
  params: z.object({ id: z.string() }),
  query: deliveriesQuery,
  body: undefined,
  status: 200,
  response: deliveryList,
  errors: ['not_found_error'],
});
