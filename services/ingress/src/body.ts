// The admin routes' import of the body-size refusal; the body reader itself is http/body.ts.
export { tooLarge } from './http/body';
