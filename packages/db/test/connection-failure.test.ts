import { isConnectionFailure } from '../src/connection-failure';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('isConnectionFailure', () => {
  it('recognises a server that is down, restarting or out of connections', () => {
    expect(isConnectionFailure(withCode('ECONNREFUSED'))).toBe(true);
    expect(isConnectionFailure(withCode('ECONNRESET'))).toBe(true);
    expect(isConnectionFailure(withCode('57P01', 'terminating connection due to administrator command'))).toBe(true);
    expect(isConnectionFailure(withCode('57P03', 'the database system is starting up'))).toBe(true);
    expect(isConnectionFailure(withCode('53300', 'sorry, too many clients already'))).toBe(true);
    expect(isConnectionFailure(withCode('08006'))).toBe(true);
    expect(isConnectionFailure(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionFailure(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isConnectionFailure(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]))).toBe(true);
  });

  it('leaves a failure of the statement itself a bug', () => {
    expect(isConnectionFailure(withCode('42P01', 'relation "api_keys" does not exist'))).toBe(false);
    expect(isConnectionFailure(withCode('23505', 'duplicate key value'))).toBe(false);
    expect(isConnectionFailure(new Error('boom'))).toBe(false);
    expect(isConnectionFailure('ECONNREFUSED')).toBe(false);
  });
});
