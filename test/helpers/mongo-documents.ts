import { EJSON } from 'bson';
import { Binary, Decimal128, Double, Int32, Long, type MongoClient, ObjectId } from 'mongodb';

/** `count` orders with most BSON types (Int32, Int64 beyond 2^53, Decimal128, Double, Date, Binary, nesting), tagged. */
export function typedOrders(count: number, tag: string) {
  return Array.from({ length: count }, (_, i) => ({
    _id: new ObjectId(),
    n: new Int32(i),
    big: Long.fromString('9007199254740993'),
    price: Decimal128.fromString(`${i}.10`),
    ratio: new Double(i / 3),
    at: new Date(1_700_000_000_000 + i),
    raw: new Binary(Buffer.from([0, 1, i % 256])),
    tag,
    nested: { tags: ['a', `t${i}`], deep: { ok: i % 2 === 0 } },
  }));
}

/** A collection's documents in `_id` order as canonical Extended JSON: every type is compared, not just the value. */
export async function canonicalDocuments(client: MongoClient, db: string, collection: string): Promise<string[]> {
  const docs = await client.db(db).collection(collection).find({}, { promoteValues: false }).sort({ _id: 1 }).toArray();
  return docs.map((doc) => EJSON.stringify(doc, { relaxed: false }));
}
