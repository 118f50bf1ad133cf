import { sigV4Signer } from '../src/adapters/bedrock/sign';

/** The credentials of AWS's published Signature Version 4 test suite. */
const suiteCredentials = async () => ({
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
});
const suiteTime = () => new Date('2015-08-30T12:36:00Z');

describe('SigV4 signing of Bedrock requests', () => {
  it('signs the published post-vanilla vector as AWS gives it', async () => {
    const signer = sigV4Signer('us-east-1', suiteCredentials, { service: 'service', now: suiteTime });
    const signed = await signer.sign({ url: 'https://example.amazonaws.com/', headers: {}, body: '' });
    expect(signed.headers['x-amz-date']).toBe('20150830T123600Z');
    expect(signed.headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
        'SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
    );
  });

  it('signs an InvokeModel request as botocore does: model id escaped in the path, escaped again when signed', async () => {
    // The expected signature was computed with botocore's SigV4Auth for the same request and time.
    const signer = sigV4Signer('eu-west-2', suiteCredentials, { now: suiteTime });
    const signed = await signer.sign({
      url: 'https://bedrock-runtime.eu-west-2.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: '{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"Hi"}]}',
    });
    expect(signed.headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-2/bedrock/aws4_request, ' +
        'SignedHeaders=accept;content-type;host;x-amz-date, ' +
        'Signature=40b02a09d42bae1b182d69ef0fb19f941d3d96a1d2bf0b856ed2b7b67039749c',
    );
    // The Host header is the URL's own: undici sends it; a second one would break the signature.
    expect(signed.headers.host).toBeUndefined();
  });

  it('sends a session token when the credentials carry one, and signs it', async () => {
    const signer = sigV4Signer(
      'eu-west-2',
      async () => ({ ...(await suiteCredentials()), sessionToken: 'session-token-example' }),
      { now: suiteTime },
    );
    const signed = await signer.sign({
      url: 'https://bedrock-runtime.eu-west-2.amazonaws.com/',
      headers: {},
      body: '',
    });
    expect(signed.headers['x-amz-security-token']).toBe('session-token-example');
    expect(signed.headers.authorization).toMatch(/SignedHeaders=host;x-amz-date;x-amz-security-token,/);
  });

  it('rejects when the credentials cannot be had', async () => {
    const signer = sigV4Signer('eu-west-2', () => Promise.reject(new Error('no credentials in the chain')));
    await expect(
      signer.sign({ url: 'https://bedrock-runtime.eu-west-2.amazonaws.com/', headers: {}, body: '' }),
    ).rejects.toThrow('no credentials');
  });
});
