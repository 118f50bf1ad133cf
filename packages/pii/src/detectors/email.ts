import type { Candidate, Detector, Scan } from '../scan';

/**
 * Email addresses. No regex from every start position (a long run of local-part characters with no '@' would
 * cost O(n²)): each '@' is an anchor, and the local part (≤ 64) and the domain (≤ 253) are scanned from it by
 * hand, so the work is bounded per '@'.
 * Local part: letters, digits (any script, after NFKC), `._%+-`; the domain: at least two labels of letters,
 * digits and '-', the last (TLD) all letters (≥ 2) or an IDN `xn--` label. Trailing labels that cannot be a TLD
 * are dropped ("a@b.com.123" → "a@b.com").
 */

const MAX_LOCAL = 64;
const MAX_DOMAIN = 253;
const MAX_LABEL = 63;

const LETTER_OR_DIGIT = /^[\p{L}\p{M}\p{N}]$/u;
const LETTERS = /^[\p{L}\p{M}]{2,63}$/u;

function isAlnum(text: string, index: number): boolean {
  const unit = text.charCodeAt(index);
  if (unit < 0x80) return (unit >= 48 && unit <= 57) || (unit >= 65 && unit <= 90) || (unit >= 97 && unit <= 122);
  if (unit >= 0xdc00 && unit <= 0xdfff) return index > 0 && LETTER_OR_DIGIT.test(text.slice(index - 1, index + 1));
  if (unit >= 0xd800 && unit <= 0xdbff) return LETTER_OR_DIGIT.test(text.slice(index, index + 2));
  return LETTER_OR_DIGIT.test(text[index]!);
}

function isLocalChar(text: string, index: number): boolean {
  const unit = text.charCodeAt(index);
  return unit === 46 || unit === 95 || unit === 37 || unit === 43 || unit === 45 || isAlnum(text, index);
}

/** True when [start, end) is 2 to 63 ASCII letters: the common TLD, decided without a copy or a regex. */
function asciiLetters(text: string, start: number, end: number): boolean {
  if (end - start < 2 || end - start > 63) return false;
  for (let index = start; index < end; index += 1) {
    const unit = text.charCodeAt(index) | 0x20;
    if (unit < 97 || unit > 122) return false;
  }
  return true;
}

export const emailDetector: Detector = {
  ids: ['email'],
  run(scan: Scan, out: Candidate[]): void {
    const text = scan.text;
    for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
      let start = at;
      while (start > 0 && at - start < MAX_LOCAL && isLocalChar(text, start - 1)) start -= 1;
      const unit = text.charCodeAt(start);
      if (unit >= 0xdc00 && unit <= 0xdfff) start += 1;
      while (start < at && text[start] === '.') start += 1;
      if (start === at || text[at - 1] === '.') continue;
      // Domain labels.
      const labelEnds: number[] = [];
      let index = at + 1;
      for (;;) {
        const labelStart = index;
        while (index < text.length && index - labelStart < MAX_LABEL && index - at <= MAX_DOMAIN) {
          if (text.charCodeAt(index) === 45 || isAlnum(text, index)) index += 1;
          else break;
        }
        if (index === labelStart || text[labelStart] === '-') break;
        let labelEnd = index;
        while (labelEnd > labelStart && text[labelEnd - 1] === '-') labelEnd -= 1;
        labelEnds.push(labelEnd);
        if (labelEnd !== index) break;
        if (text[index] === '.' && index + 1 < text.length && isAlnum(text, index + 1)) index += 1;
        else break;
      }
      // Drop trailing labels that cannot be a TLD.
      while (labelEnds.length >= 2) {
        const tldEnd = labelEnds[labelEnds.length - 1]!;
        const tldStart = labelEnds[labelEnds.length - 2]! + 1;
        if (asciiLetters(text, tldStart, tldEnd)) break;
        const tld = text.slice(tldStart, tldEnd);
        if (LETTERS.test(tld) || /^xn--[a-z0-9-]{1,59}$/i.test(tld)) break;
        labelEnds.pop();
      }
      if (labelEnds.length < 2) continue;
      const end = labelEnds[labelEnds.length - 1]!;
      out.push({
        detector: 'email',
        type: 'EMAIL',
        start,
        end,
        confidence: 0.9,
        canonical: text.slice(start, end).toLowerCase(),
      });
    }
  },
};
