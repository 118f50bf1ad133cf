/** Messages shared by more than one service, so that the same refusal always reads the same. */
export const authenticationErrorMessage =
  'Invalid or missing API key. Send your key as a bearer token in the "Authorization: Bearer <API_KEY>" header or in the "x-api-key" header.';

export const internalErrorMessage =
  'The gateway failed to process the request. Retry once, then contact support quoting the x-request-id header.';
