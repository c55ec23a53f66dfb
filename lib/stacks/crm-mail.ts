/**
 * E-mail on AWS (docs/notifications.md "Transport", docs/deploy.md "E-mail"): an SES configuration
 * set every notice is sent through, its bounce and complaint events sent by EventBridge to the mail
 * feedback queue (the mail-feedback function suppresses the address), and the mailer's grant:
 * ses:SendEmail and ses:SendRawEmail on the stage's sending identity and this configuration set
 * only, from the stage's sender address only. The identity (a domain, verified in SES by hand: docs/deploy.md) is the sender's domain.
 */
import { Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as ses from 'aws-cdk-lib/aws-ses';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { mailerEnvVars } from '../../functions/core/platform/bindings.js';
import type { CrmFunction } from './crm-function.js';

export interface CrmMailProps {
  /** The From address (`Name <notices@crm.example.com>` or the bare address). */
  sender: string;
  /** The functions that send (topology `sendsMail`). */
  senders: CrmFunction[];
  feedbackQueue: sqs.IQueue;
}

/** The bare address of a sender (`Name <a@b>` or `a@b`): the grant's `ses:FromAddress`. */
export const senderAddress = (sender: string) => (/<([^>]+)>/.exec(sender)?.[1] ?? sender).trim();

/** The domain of a sender: the SES identity the grant names. */
export function senderDomain(sender: string): string {
  const address = senderAddress(sender);
  const domain = address.split('@')[1]?.trim().toLowerCase();
  if (!domain) throw new Error(`notices sender "${sender}" has no domain: set the stage's notices.sender to an address (lib/stages.ts)`);
  return domain;
}

export class CrmMail extends Construct {
  readonly configurationSet: ses.ConfigurationSet;

  constructor(scope: Construct, id: string, props: CrmMailProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // SES's own account-level suppression list as well: a hard bounce or complaint is never retried by SES either.
    this.configurationSet = new ses.ConfigurationSet(this, 'ConfigurationSet', { suppressionReasons: ses.SuppressionReasons.BOUNCES_AND_COMPLAINTS });
    const bus = events.EventBus.fromEventBusName(this, 'DefaultBus', 'default');
    this.configurationSet.addEventDestination('Feedback', { destination: ses.EventDestination.eventBus(bus), events: [ses.EmailSendingEvent.BOUNCE, ses.EmailSendingEvent.COMPLAINT] });
    new events.Rule(this, 'FeedbackRule', {
      description: 'SES bounces and complaints of the notices: to the mail feedback queue',
      eventPattern: {
        source: ['aws.ses'], detailType: ['Email Bounced', 'Email Complaint Received'],
        detail: { mail: { tags: { 'ses:configuration-set': [this.configurationSet.configurationSetName] } } },
      },
      targets: [new SqsQueue(props.feedbackQueue)],
    });
    const identity = stack.formatArn({ service: 'ses', resource: 'identity', resourceName: senderDomain(props.sender) });
    const configurationSetArn = stack.formatArn({ service: 'ses', resource: 'configuration-set', resourceName: this.configurationSet.configurationSetName });
    for (const fn of props.senders) {
      // As the stage's sender only: another address of the verified domain is not this role's to send as.
      fn.addToRolePolicy(new iam.PolicyStatement({
        actions: ['ses:SendEmail', 'ses:SendRawEmail'], resources: [identity, configurationSetArn],
        conditions: { StringEquals: { 'ses:FromAddress': senderAddress(props.sender) } },
      }));
      fn.addEnvironment(mailerEnvVars.sesConfigurationSet, this.configurationSet.configurationSetName);
    }
  }
}
