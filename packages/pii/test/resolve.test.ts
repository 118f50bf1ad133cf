import { detect } from '../src';
import { resolveOverlaps, type Placed } from '../src/detect';
import type { DetectorId, EntityType } from '../src/types';

function placed(type: EntityType, detector: DetectorId, start: number, end: number, confidence: number): Placed {
  return { type, detector, start, end, confidence, canonical: `${type}${start}`, normStart: start, normEnd: end };
}

const spans = (entities: ReturnType<typeof resolveOverlaps>) =>
  entities.map((entity) => [entity.type, entity.start, entity.end, entity.confidence]);

describe('overlap resolution', () => {
  const text = 'x'.repeat(100);

  it('turns overlapping matches into one entity: the union of the spans, typed by the winner', () => {
    const resolved = resolveOverlaps(
      [placed('PHONE', 'phone', 5, 15, 0.6), placed('EMAIL', 'email', 0, 10, 0.9)],
      text,
    );
    expect(spans(resolved)).toEqual([['EMAIL', 0, 15, 0.9]]);
  });

  it('follows chains of overlaps', () => {
    const resolved = resolveOverlaps(
      [placed('CARD', 'card', 0, 10, 0.6), placed('PHONE', 'phone', 8, 20, 0.7), placed('IBAN', 'iban', 18, 30, 0.95)],
      text,
    );
    expect(spans(resolved)).toEqual([['IBAN', 0, 30, 0.95]]);
  });

  it('breaks ties by length, then start, then the fixed type order', () => {
    expect(
      spans(resolveOverlaps([placed('PHONE', 'phone', 0, 10, 0.6), placed('CARD', 'card', 2, 9, 0.6)], text)),
    ).toEqual([['PHONE', 0, 10, 0.6]]);
    expect(
      spans(resolveOverlaps([placed('PHONE', 'phone', 3, 10, 0.6), placed('CARD', 'card', 0, 7, 0.6)], text)),
    ).toEqual([['CARD', 0, 10, 0.6]]);
    expect(
      spans(
        resolveOverlaps(
          [placed('NATIONAL_ID', 'de_steuer_id', 0, 11, 0.8), placed('NHS_NUMBER', 'nhs', 0, 11, 0.8)],
          text,
        ),
      ),
    ).toEqual([['NATIONAL_ID', 0, 11, 0.8]]);
  });

  it('keeps adjacent, non-overlapping matches apart', () => {
    const resolved = resolveOverlaps([placed('EMAIL', 'email', 5, 10, 0.9), placed('PHONE', 'phone', 0, 5, 0.6)], text);
    expect(spans(resolved)).toEqual([
      ['PHONE', 0, 5, 0.6],
      ['EMAIL', 5, 10, 0.9],
    ]);
  });

  it('resolves real overlaps: an IPv4-mapped IPv6 address is one IP_ADDRESS', () => {
    const value = '::ffff:192.0.2.1';
    const entities = detect(`client ${value} connected`);
    expect(entities.map((entity) => [entity.type, entity.start, entity.end])).toEqual([
      ['IP_ADDRESS', 7, 7 + value.length],
    ]);
  });
});
