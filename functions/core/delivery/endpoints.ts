/**
 * Webhook endpoints of an organization (docs/webhooks.md): up to 10, each with a URL, its subscribed
 * events, a signing secret shown once, an enabled flag and a description. What each operation
 * decides and checks; the endpoints table itself is endpoint-store.ts's.
 */
import type { Deps } from '../platform/deps.js';
import { DomainError, notFound, validationFailed } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { retryLostRaces } from '../platform/optimistic.js';
import { type CircuitState, type WebhookEndpoint } from '../platform/model.js';
import { circuitView } from './circuit-breaker.js';
import { parseSubscription } from './subscriptions.js';
import { newSigningKey, publicKeyOf, schemeOf, signersOf, signingOf, type SigningScheme } from './signing.js';
// The organization store alone, not tenancy/organizations.ts: that would bring the wallet and billing into the fan-out's and delivery's bundles.
import { organizationStore } from '../tenancy/organization-store.js';
import { endpointStore, type EndpointChange, type EndpointFields, type FanOutView } from './endpoint-store.js';
import { noticeDisabled } from './endpoint-notices.js';
import { applyHeaderChanges, maskedHeaders, requireHeadersAgain, validateOptions, validateUrl, type HeaderChanges } from './endpoint-fields.js';

/** A key that signs now, as its owner sees it: its scheme, an ed25519 key's public key, and when a retiring one stops. */
export interface SigningKeyView { scheme: SigningScheme; publicKey?: string; expiresAt?: string }

/**
 * What an endpoint shows its owner: never its secrets or private keys; its signing scheme, its
 * public key (ed25519) and every key signing now with its end time (a rotation's or a switch's
 * grace); its custom headers by name with masked values (endpoint-fields.ts); its circuit as a
 * state (docs/architecture.md#fair-delivery).
 */
export type EndpointSummary = Omit<WebhookEndpoint, 'secrets' | 'circuit' | 'secretsVersion' | 'headers'> & {
  signing: SigningScheme; publicKey?: string; signingKeys: SigningKeyView[];
  secretCount: number; headers: Record<string, string>; circuit: { state: CircuitState; until?: string; slowLane?: true };
};

/** A key's public half for the owner's view; none for a key that is not a valid ed25519 key (an item edited by hand): the list still answers. */
const shownPublicKey = (secret: string): { publicKey?: string } => {
  try {
    return { publicKey: publicKeyOf(secret) };
  } catch {
    return {};
  }
};

const summary = ({ secrets, circuit, secretsVersion: _v, headers, ...rest }: WebhookEndpoint, now: number): EndpointSummary => {
  const signing = signingOf({ secrets });
  const signingKeys = signersOf({ secrets }, now).map(({ scheme, secret, expiresAt }): SigningKeyView => ({
    scheme, ...(scheme === 'ed25519' ? shownPublicKey(secret) : {}), ...(expiresAt ? { expiresAt } : {}),
  }));
  return {
    ...rest, signing, ...(signing === 'ed25519' ? shownPublicKey(secrets[0]!.secret) : {}), signingKeys,
    secretCount: secrets.length, headers: maskedHeaders(headers), circuit: circuitView(circuit, now),
  };
};

/** What a new key answers: a `whsec_` secret is shown this once; an ed25519 private key never is (its public key is, always). */
const shownOnce = (key: string): { secret?: string } => (schemeOf(key) === 'hmac' ? { secret: key } : {});

/** The options a new endpoint or an update may set, validated (a 422 names the bad header). */
export interface EndpointOptions { headers?: HeaderChanges; rateLimitPerSecond?: number | null }

/** Signing secrets an endpoint may hold at once (the newest and those in a grace): each signs every delivery. */
export const MAX_SIGNING_SECRETS = 5;

const tooManyEndpoints = (max: number) => validationFailed([{ field: 'url', message: `an organization has at most ${max} endpoints; remove one first` }]);

async function requireOrganization(deps: Deps, organizationId: string): Promise<void> {
  if (!await organizationStore(deps).getOrganization(organizationId)) throw notFound(`No organization ${organizationId}.`);
}

type NewEndpoint = { url: string; events: string | string[]; description?: string; enabled?: boolean; /** Default hmac. */ signing?: SigningScheme } & EndpointOptions;
/** A new endpoint; an hmac one answers its `whsec_` secret this once, an ed25519 one its public key (in the summary). */
export async function addEndpoint(deps: Deps, organizationId: string, input: NewEndpoint & { signing?: 'hmac' }): Promise<{ endpoint: EndpointSummary; secret: string }>;
export async function addEndpoint(deps: Deps, organizationId: string, input: NewEndpoint): Promise<{ endpoint: EndpointSummary; secret?: string }>;
export async function addEndpoint(deps: Deps, organizationId: string, input: NewEndpoint): Promise<{ endpoint: EndpointSummary; secret?: string }> {
  await requireOrganization(deps, organizationId);
  const url = validateUrl(deps, input.url);
  const events = parseSubscription(input.events);
  if (input.description && input.description.length > 500) throw validationFailed([{ field: 'description', message: 'must be at most 500 characters' }]);
  const options = validateOptions(input);
  const headers = applyHeaderChanges({}, options.headers);
  const rate = options.rate ?? null;
  const max = deps.config.maxEndpointsPerOrganization;
  const secret = newSigningKey(input.signing ?? 'hmac');
  const now = new Date(deps.now()).toISOString();
  const endpoint: WebhookEndpoint = {
    id: newId('ep'), organizationId, url, events, secrets: [{ secret, createdAt: now }], secretsVersion: 1, enabled: input.enabled ?? true,
    ...(input.description ? { description: input.description } : {}), createdAt: now,
    headers, ...(rate !== null ? { rateLimitPerSecond: rate } : {}),
  };
  const created = await retryLostRaces('The organization\'s endpoints', () => endpointStore(deps).createEndpoint(endpoint, max));
  if (created === 'full') throw tooManyEndpoints(max);
  return { endpoint: summary(endpoint, deps.now()), ...shownOnce(secret) };
}

export async function listEndpoints(deps: Deps, organizationId: string): Promise<EndpointSummary[]> {
  await requireOrganization(deps, organizationId);
  return (await endpointStore(deps).listEndpoints(organizationId)).map((e) => summary(e, deps.now()));
}

export const getEndpoint = (deps: Deps, organizationId: string, endpointId: string): Promise<WebhookEndpoint | undefined> =>
  endpointStore(deps).getEndpoint(organizationId, endpointId);

const noEndpoint = (organizationId: string, endpointId: string) => notFound(`No endpoint ${endpointId} in organization ${organizationId}.`);

export async function requireEndpoint(deps: Deps, organizationId: string, endpointId: string): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(deps, organizationId, endpointId);
  if (!endpoint) throw noEndpoint(organizationId, endpointId);
  return endpoint;
}

/**
 * Changes only the attributes asked for, with one write (endpoint-store.ts updateEndpoint): never
 * the whole item read earlier, so a rotation, a health mark or a circuit change made meanwhile is
 * kept (the secrets are never written here). Custom headers change one name at a time, so two
 * admins adding different headers keep both; the write is conditional on the count of headers
 * read, so their bound holds however many change them at once (a lost race reads again, bounded,
 * then 409). Answers the endpoint as stored after the update.
 */
export async function updateEndpoint(
  deps: Deps, organizationId: string, endpointId: string,
  input: {
    url?: string; events?: string | string[]; description?: string; enabled?: boolean; /** Keep the custom headers for a new URL on the same origin. */ keepHeaders?: boolean;
    /** Switch the signing scheme (a rotation to a key of that scheme: the old one signs for `graceHours`, default 24). */ signing?: SigningScheme; graceHours?: number;
  } & EndpointOptions,
): Promise<EndpointSummary & { secret?: string }> {
  const { headers: headerChanges, rate } = validateOptions(input);
  const grace = graceOf(input.graceHours);
  // A grace alone would look accepted and change nothing: a new secret of the same scheme is rotateSecret's.
  if (input.graceHours !== undefined && input.signing === undefined) throw validationFailed([{ field: 'grace_hours', message: 'goes with signing (a new secret or key of the same scheme: rotate-secret)' }]);
  const updated = await retryLostRaces('The endpoint\'s headers', async () => {
    const current = await requireEndpoint(deps, organizationId, endpointId);
    const set: EndpointFields = {};
    const change: EndpointChange = { set, remove: [] };
    if (input.url !== undefined) {
      set.url = validateUrl(deps, input.url);
      requireHeadersAgain(current, set.url, headerChanges, input.keepHeaders === true);
    }
    if (input.events !== undefined) set.events = parseSubscription(input.events);
    if (input.description !== undefined) {
      if (input.description.length > 500) throw validationFailed([{ field: 'description', message: 'must be at most 500 characters' }]);
      if (input.description) set.description = input.description;
      else change.remove.push('description');
    }
    if (input.enabled !== undefined) set.enabled = input.enabled;
    if (rate === null) change.remove.push('rateLimitPerSecond');
    else if (rate !== undefined) set.rateLimitPerSecond = rate;
    if (Object.keys(headerChanges).length) {
      const next = applyHeaderChanges(current.headers ?? {}, headerChanges); // a 422 past the bound
      if (!current.headers) change.headers = { whole: next }; // an endpoint from before headers
      else {
        // Nothing to remove for a name not there (an unused name is an error to DynamoDB).
        const changes = Object.fromEntries(Object.entries(headerChanges).filter(([name, value]) => value !== null || Object.hasOwn(current.headers!, name)));
        change.headers = { changes, count: Object.keys(current.headers).length };
      }
    }
    // Re-enabling clears the health state that disabled it; a new URL or a re-enable also closes the
    // circuit (the operator says the receiver is fixed: the next delivery tries it at once).
    if (input.enabled === true) change.clearHealth = true;
    if (input.enabled === true || (set.url !== undefined && set.url !== current.url)) change.closeCircuit = true;
    const empty = Object.keys(set).length === 0 && change.remove.length === 0 && !change.clearHealth && !change.closeCircuit
      && (!change.headers || ('changes' in change.headers && Object.keys(change.headers.changes).length === 0));
    if (empty) return current;
    const stored = await endpointStore(deps).updateEndpoint(current, change);
    if (stored === 'missing') throw noEndpoint(organizationId, endpointId); // removed meanwhile: an update never brings it back
    return stored;
  });
  // A scheme switch is a rotation to a key of the other scheme, with its own versioned write (the secrets are rotateSecret's alone).
  if (input.signing !== undefined && input.signing !== signingOf(updated)) {
    const { endpoint, secret } = await rotateSecret(deps, organizationId, endpointId, { graceHours: grace, signing: input.signing });
    return { ...endpoint, ...(secret ? { secret } : {}) };
  }
  return summary(updated, deps.now());
}

const graceOf = (hours: number | undefined): number => {
  const grace = hours ?? 24;
  if (!Number.isFinite(grace) || grace < 0) throw validationFailed([{ field: 'grace_hours', message: 'must be zero or more hours' }]);
  return grace;
};

/** Removes the endpoint and gives its slot back (the count), in one transaction. */
export async function removeEndpoint(deps: Deps, organizationId: string, endpointId: string): Promise<EndpointSummary> {
  const current = await requireEndpoint(deps, organizationId, endpointId);
  const removed = await retryLostRaces('The organization\'s endpoints', () => endpointStore(deps).removeEndpoint(current));
  if (removed === 'missing') throw noEndpoint(organizationId, endpointId);
  return summary(current, deps.now());
}

/**
 * A new secret; the previous ones keep signing for `graceHours` (default 24), so receivers can
 * switch. At most MAX_SIGNING_SECRETS signing at once: a rotation with a grace past it is a 422.
 * The secret list carries a version (`secretsVersion`): the write is conditional on the version
 * read, so two rotations never both answer a secret of which one is then overwritten; the loser
 * reads again and rotates on top (bounded, then 409). The answered secret is the stored one.
 * The new key is of the endpoint's scheme, or of `signing` (a scheme switch: the old scheme's keys
 * sign through the grace too). An hmac secret is answered this once; an ed25519 private key never.
 */
export async function rotateSecret(deps: Deps, organizationId: string, endpointId: string, options: { graceHours?: number; signing?: SigningScheme } = {}): Promise<{ endpoint: EndpointSummary; secret?: string }> {
  const grace = options.graceHours ?? 24;
  if (!Number.isFinite(grace) || grace < 0) throw validationFailed([{ field: 'grace', message: 'must be zero or more hours' }]);
  const { endpoint, secret } = await retryLostRaces('The endpoint\'s signing secrets', async () => {
    const current = await requireEndpoint(deps, organizationId, endpointId);
    const now = deps.now();
    // Each rotation with a grace keeps the older secrets signing: bounded, or repeated rotations grow every delivery's signature header.
    if (grace > 0 && activeSecrets(current, now).length >= MAX_SIGNING_SECRETS) {
      throw validationFailed([{ field: 'grace_hours', message: `the endpoint already has ${MAX_SIGNING_SECRETS} secrets signing; rotate with grace_hours 0 or wait for a grace to end` }]);
    }
    const until = new Date(now + grace * 3_600_000).toISOString();
    const kept = current.secrets
      .filter((s) => !s.expiresAt || Date.parse(s.expiresAt) > now)
      .map((s) => ({ ...s, expiresAt: s.expiresAt && s.expiresAt < until ? s.expiresAt : until }))
      .filter(() => grace > 0);
    const secret = newSigningKey(options.signing ?? signingOf(current));
    const secrets = [{ secret, createdAt: new Date(now).toISOString() }, ...kept];
    const stored = await endpointStore(deps).rotateSecret(current, secrets, current.secretsVersion ?? 0);
    if (stored === 'missing') throw noEndpoint(organizationId, endpointId);
    return { endpoint: stored, secret };
  });
  return { endpoint: summary(endpoint, deps.now()), ...shownOnce(secret) };
}

/** One endpoint's outcome in a rotation of many: its new secret, or why it kept its secrets. */
export interface RotationOutcome { organizationId: string; endpointId: string; url: string; secret?: string; error?: string }

/**
 * Rotates the signing secret of every endpoint of the given organizations, or of all of them (a
 * leak: docs/operations.md "Rotating every signing secret"), one endpoint at a time through
 * rotateSecret (its grace, bound and versioned write). An endpoint that cannot be rotated (already
 * MAX_SIGNING_SECRETS signing, removed meanwhile) is reported and the others go on, so a run can be
 * repeated for those alone. `dryRun`: the endpoints it would rotate, nothing written. `onEach`
 * reports progress (done of total).
 */
export async function rotateSecrets(
  deps: Deps, organizations: string[] | 'all',
  options: { graceHours?: number; dryRun?: boolean; onEach?: (outcome: RotationOutcome, done: number, total: number) => void } = {},
): Promise<RotationOutcome[]> {
  const ids = organizations === 'all' ? (await organizationStore(deps).listOrganizations()).map((o) => o.id) : organizations;
  for (const id of ids) await requireOrganization(deps, id); // a mistyped id fails before anything is rotated
  const endpoints = (await Promise.all(ids.map((id) => endpointStore(deps).listEndpoints(id)))).flat();
  const outcomes: RotationOutcome[] = [];
  for (const endpoint of endpoints) {
    const outcome: RotationOutcome = { organizationId: endpoint.organizationId, endpointId: endpoint.id, url: endpoint.url };
    if (!options.dryRun) {
      try {
        outcome.secret = (await rotateSecret(deps, endpoint.organizationId, endpoint.id, { graceHours: options.graceHours })).secret;
      } catch (error) {
        const fields = error instanceof DomainError ? error.extra.errors ?? [] : [];
        outcome.error = [(error as Error).message, ...fields.map((f) => `${f.field}: ${f.message}`)].join(' ');
      }
    }
    outcomes.push(outcome);
    options.onEach?.(outcome, outcomes.length, endpoints.length);
  }
  return outcomes;
}

/** The secrets and keys that sign right now: the newest first, then any still inside their grace (signing.ts signersOf; signFor signs with them). */
export const activeSecrets = (endpoint: WebhookEndpoint, now: number): string[] => signersOf(endpoint, now).map((s) => s.secret);

/**
 * Records a failing streak and disables the endpoint once it has failed for too long; clears it on
 * success. The write that disables it produces the `endpoint.disabled` notice (`lastError`: what the
 * attempt said).
 */
export async function recordEndpointHealth(deps: Deps, endpoint: WebhookEndpoint, outcome: 'ok' | 'failed' | 'gone', lastError?: string): Promise<void> {
  const store = endpointStore(deps);
  const now = new Date(deps.now()).toISOString();
  const disable = async (reason: string) => {
    if (await store.disableEndpoint(endpoint, reason)) await noticeDisabled(deps, endpoint, { since: now, reason, lastError });
  };
  if (outcome === 'ok') {
    if (endpoint.failingSince) await store.clearFailing(endpoint);
  } else if (outcome === 'gone') {
    await disable(`the receiver answered 410 Gone at ${now}`);
  } else if (!endpoint.failingSince) {
    await store.markFailing(endpoint, now);
  } else if (deps.now() - Date.parse(endpoint.failingSince) > deps.config.disableAfterFailingHours * 3_600_000) {
    await disable(`failing without a success since ${endpoint.failingSince}`);
  }
}

/**
 * An organization's endpoints as stored now (a consistent read). The fan-out reads them this way,
 * once per organization per stream batch, so an endpoint hears of every change written after it
 * was added, whatever the delivery cache holds. Routing fields only (`secrets` empty, circuit absent):
 * the fan-out's grant cannot read more (docs/decisions.md, "Endpoints in their own table").
 */
export const currentEndpoints = (deps: Deps, organizationId: string): Promise<WebhookEndpoint[]> =>
  endpointStore(deps).listEndpoints(organizationId, { routingOnly: true });

/**
 * What the fan-out reads of an organization, once per stream batch: its endpoints as currentEndpoints
 * reads them, and until when its shares go on being handed off (events/fanout.ts), in one Query.
 */
export const routingOf = (deps: Deps, organizationId: string): Promise<FanOutView> => endpointStore(deps).fanOutRead(organizationId);

/** Hands the organization's next shares off until `until` (epoch ms): the fan-out's marker, read by routingOf. */
export const markHandOff = (deps: Deps, organizationId: string, until: number): Promise<void> => endpointStore(deps).markHandOff(organizationId, until);

/** An organization's endpoints for delivery, through the container's cache (endpoint-store.ts deliveryEndpoints). */
export const endpointsOf = (deps: Deps, organizationId: string, endpointId?: string): Promise<WebhookEndpoint[]> =>
  endpointStore(deps).deliveryEndpoints(organizationId, endpointId);
