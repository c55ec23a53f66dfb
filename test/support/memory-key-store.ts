/**
 * The API keys' store (functions/core/tenancy/key-store.ts) in memory: key items by hash, the
 * organization's index over them, and its slot item with its version. Every write is all or
 * nothing, on the same conditions as the DynamoDB transactions: a new key's hash unused, the ended
 * key as read (not revoked, same expiry), the slot item's version. A failed one throws LostRace,
 * as the DynamoDB store does. test/integration/stores/key-store.contract.test.ts holds the two to
 * one behaviour.
 */
import type { ApiKeyRecord } from '../../functions/core/platform/model.js';
import { LostRace } from '../../functions/core/platform/optimistic.js';
import type { KeySlots, KeyStore, SlotsWrite } from '../../functions/core/tenancy/key-store.js';
import { Faults, throttled } from './faults.js';

type Op = 'listKeys' | 'findKey' | 'findKeyByHash' | 'readKeySlots' | 'createKey' | 'rotateKey' | 'revokeKey' | 'recordKeyUse';
const copy = <T>(value: T): T => structuredClone(value);

export class MemoryKeyStore implements KeyStore {
  /** Key items by hash. */
  readonly keys = new Map<string, ApiKeyRecord>();
  /** Slot items by organization. */
  readonly slots = new Map<string, KeySlots>();
  readonly faults = new Faults<Op>();

  /** A key written before slot items existed (no slot item taken): as old organizations hold them. */
  seedKey(record: ApiKeyRecord): void {
    this.keys.set(record.hash, copy(record));
  }

  /** Plays a queued fault: throws for a throttle or a failed condition; a lost race lets another writer change the slots first. */
  private fault(op: Op, organizationId?: string): void {
    const fault = this.faults.take(op);
    if (fault === 'throttle') throw throttled();
    if (fault === 'failed-condition') throw new LostRace(`${op}: injected failed condition`);
    if (fault === 'lost-race' && organizationId) {
      const slots = this.slots.get(organizationId);
      this.slots.set(organizationId, { live: { ...slots?.live }, version: (slots?.version ?? 0) + 1 });
    }
  }

  async listKeys(organizationId: string): Promise<ApiKeyRecord[]> {
    this.fault('listKeys');
    return [...this.keys.values()].filter((k) => k.organizationId === organizationId).map(copy);
  }

  async findKey(organizationId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    this.fault('findKey');
    const found = [...this.keys.values()].find((k) => k.organizationId === organizationId && k.keyId === keyId);
    return found && copy(found);
  }

  async findKeyByHash(hash: string, _options?: { consistent?: boolean }): Promise<ApiKeyRecord | undefined> {
    this.fault('findKeyByHash');
    const found = this.keys.get(hash);
    return found && copy(found);
  }

  async readKeySlots(organizationId: string): Promise<KeySlots> {
    this.fault('readKeySlots');
    const slots = this.slots.get(organizationId);
    if (slots) return copy(slots);
    const live = Object.fromEntries([...this.keys.values()]
      .filter((k) => k.organizationId === organizationId && !k.revokedAt).map((k) => [k.keyId, k.expiresAt ?? null]));
    return { live, version: 0 };
  }

  private slotsHold(write: SlotsWrite): boolean {
    return (this.slots.get(write.organizationId)?.version ?? 0) === write.read;
  }

  private writeSlots(write: SlotsWrite): void {
    this.slots.set(write.organizationId, { live: copy(write.live), version: write.read + 1 });
  }

  /** The key as read is the key as stored: there, not revoked, same expiry. */
  private unchanged(record: ApiKeyRecord): boolean {
    const stored = this.keys.get(record.hash);
    return Boolean(stored) && !stored!.revokedAt && stored!.expiresAt === record.expiresAt;
  }

  async createKey(record: ApiKeyRecord, slots: SlotsWrite): Promise<void> {
    this.fault('createKey', slots.organizationId);
    if (!this.slotsHold(slots)) throw new LostRace('key slots');
    if (this.keys.has(record.hash)) throw new LostRace('key id taken');
    this.keys.set(record.hash, copy(record));
    this.writeSlots(slots);
  }

  async rotateKey({ created, old, endAt, revoke, slots }: Parameters<KeyStore['rotateKey']>[0]): Promise<void> {
    this.fault('rotateKey', slots.organizationId);
    if (!this.slotsHold(slots)) throw new LostRace('key slots');
    if (this.keys.has(created.hash) || !this.unchanged(old)) throw new LostRace('key id taken or the key changed');
    this.keys.set(created.hash, copy(created));
    const stored = this.keys.get(old.hash)!;
    if (revoke) stored.revokedAt = endAt;
    else stored.expiresAt = endAt;
    this.writeSlots(slots);
  }

  async revokeKey({ key, at, slots }: Parameters<KeyStore['revokeKey']>[0]): Promise<void> {
    this.fault('revokeKey', slots.organizationId);
    if (!this.slotsHold(slots)) throw new LostRace('key slots');
    if (!this.unchanged(key)) throw new LostRace('the key changed');
    this.keys.get(key.hash)!.revokedAt = at;
    this.writeSlots(slots);
  }

  async recordKeyUse(hash: string, at: string): Promise<void> {
    this.fault('recordKeyUse');
    const stored = this.keys.get(hash);
    if (!stored) throw Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });
    stored.lastUsedAt = at;
  }
}
