import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A PEM certificate and its private key, as files. */
export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/** A throw-away certificate authority of a test: its own certificate and key, and what it issues. */
export interface TestCertificateAuthority extends CertificateFiles {
  /**
   * A certificate for 127.0.0.1 and localhost, usable by a server and by a client alike, valid for two
   * days: long enough for any test run, short enough to be worthless afterwards.
   */
  issue(name: string): Promise<CertificateFiles>;
}

// Extensions of the two kinds of certificate; passed as the whole configuration, so that the
// machine's openssl.cnf adds nothing.
const extensions = `
[authority]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
authorityKeyIdentifier = keyid
`;

const validityDays = '2';
const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-noenc'];

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    const { code, stderr } = error as { code?: string | number; stderr?: string };
    if (code === 'ENOENT') {
      throw new Error('openssl is not installed: `bash deploy/local/infra.sh tools` installs it (Debian)');
    }
    throw new Error(`openssl ${args[0]} failed: ${stderr ?? String(error)}`);
  }
}

/** Makes a new certificate authority in dir (created if missing) with the openssl command-line tool. */
export async function createTestCertificateAuthority(dir: string, name: string): Promise<TestCertificateAuthority> {
  await mkdir(dir, { recursive: true });
  const config = join(dir, 'extensions.cnf');
  await writeFile(config, extensions);
  const authority = { certFile: join(dir, 'ca.crt'), keyFile: join(dir, 'ca.key') };
  await openssl([
    'req',
    '-x509',
    ...newKey,
    '-keyout',
    authority.keyFile,
    '-out',
    authority.certFile,
    '-days',
    validityDays,
    '-subj',
    `/CN=${name}`,
    '-config',
    config,
    '-extensions',
    'authority',
  ]);
  return {
    ...authority,
    issue: async (leafName) => {
      const leaf = { certFile: join(dir, `${leafName}.crt`), keyFile: join(dir, `${leafName}.key`) };
      const request = join(dir, `${leafName}.csr`);
      await openssl(['req', '-new', ...newKey, '-keyout', leaf.keyFile, '-out', request, '-subj', `/CN=${leafName}`]);
      await openssl([
        'x509',
        '-req',
        '-in',
        request,
        '-CA',
        authority.certFile,
        '-CAkey',
        authority.keyFile,
        '-set_serial',
        `0x${randomBytes(8).toString('hex')}`,
        '-days',
        validityDays,
        '-out',
        leaf.certFile,
        '-extfile',
        config,
        '-extensions',
        'leaf',
      ]);
      return leaf;
    },
  };
}
