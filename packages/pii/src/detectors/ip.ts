import { isIPv6 } from 'node:net';
import { allMatches, isWordChar, NEGATIVE_CONTEXT, wordList, type Candidate, type Detector, type Scan } from '../scan';

/**
 * IPv4 and IPv6 addresses. Dotted quads are common outside networking ("version 1.2.3.4", "section 2.1.3.4"), so
 * those words lower the score below the threshold. IPv6 candidates are maximal runs of hex digits, ':' and '.'
 * (one linear pass), validated by node's parser; short ones ("a::b") need a context word.
 */

const IP_CONTEXT = wordList([
  'ip',
  'ip address',
  'ipv4',
  'ipv6',
  'address',
  'host',
  'server',
  'client',
  'remote',
  'src',
  'dst',
  'source',
  'destination',
  'login',
  'logged in',
  'connected',
  'from',
  'x-forwarded-for',
]);

const VERSION_CONTEXT = wordList([
  'version',
  'ver',
  'v',
  'release',
  'build',
  'firmware',
  'section',
  'chapter',
  'clause',
  'step',
  'figure',
  'fig',
  'table',
  'paragraph',
  'para',
  'item',
  'rule',
  'oid',
  'page',
  'isbn',
]);

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`(?<![\\p{L}\\p{N}_.])${OCTET}(?:\\.${OCTET}){3}(?!\\p{N}|\\.\\p{N}|[\\p{L}_])`, 'gu');

const MAX_IPV6 = 45;
const isHexOrColon = (unit: number): boolean =>
  (unit >= 48 && unit <= 58) || (unit >= 65 && unit <= 70) || (unit >= 97 && unit <= 102) || unit === 46;

export const ipDetector: Detector = {
  ids: ['ipv4', 'ipv6'],
  run(scan: Scan, out: Candidate[]): void {
    const text = scan.text;
    for (const match of allMatches(IPV4, text)) {
      const start = match.index;
      const end = start + match[0].length;
      const versionLike = scan.near(VERSION_CONTEXT, start, end, 24, 0);
      out.push({
        detector: 'ipv4',
        type: 'IP_ADDRESS',
        start,
        end,
        confidence: Math.max(
          0,
          scan.score(0.6, start, end, IP_CONTEXT, { negative: NEGATIVE_CONTEXT }) - (versionLike ? 0.5 : 0),
        ),
        canonical: match[0],
      });
    }
    // Only a run with two colons can be an address: each run is found from one of its colons (indexOf is far
    // faster than a test of every character), widened to its maximal extent, and the search goes on past it.
    let index = 0;
    for (let colon = text.indexOf(':'); colon >= 0; colon = text.indexOf(':', index)) {
      let runStart = colon;
      while (runStart > index && isHexOrColon(text.charCodeAt(runStart - 1))) runStart -= 1;
      let end = colon + 1;
      let colons = 1;
      while (end < text.length && isHexOrColon(text.charCodeAt(end))) {
        if (text.charCodeAt(end) === 58) colons += 1;
        end += 1;
      }
      let start = runStart;
      index = end;
      if (colons < 2) continue;
      // "ip:fe80::1" → drop a single leading ':'; a sentence's '.' or ':' at the end.
      if (text[start] === ':' && text[start + 1] !== ':') start += 1;
      while (end > start && (text[end - 1] === '.' || (text[end - 1] === ':' && text[end - 2] !== ':'))) end -= 1;
      if (end - start > MAX_IPV6 || end - start < 3) continue;
      if (isWordChar(text, start - 1) || isWordChar(text, end)) continue;
      const value = text.slice(start, end);
      if (!isIPv6(value)) continue;
      const hexDigits = value.replace(/[^0-9a-f]/gi, '').length;
      const groups = value.split(':').filter((part) => part.length > 0).length;
      const base = groups >= 3 && hexDigits >= 6 ? 0.7 : 0.35;
      out.push({
        detector: 'ipv6',
        type: 'IP_ADDRESS',
        start,
        end,
        confidence: scan.score(base, start, end, IP_CONTEXT),
        canonical: value.toLowerCase(),
      });
    }
  },
};
