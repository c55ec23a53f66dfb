/**
 * The REST API in front of the functions (routes and catch-alls from functions/front-door/, gateway
 * answers, per-method throttles, CORS), its logs (access, execution, both with the stage's retention)
 * and the WAF in front of its stage, whose logs redact the headers that carry API keys.
 */
import { ArnFormat, Duration, RemovalPolicy, Size, Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { type FunctionName } from '../topology.js';
import { catchAllAnswers, compressionMinBytes, gatewayProblemBody, gatewayResponses, mockRequestContentTypes, mockRequestTemplate, binaryMediaTypes, type GatewayAnswerSpec, type GatewayResponseType } from '../../functions/front-door/gateway-answers.js';
import { cors, corsResponseHeaders } from '../../functions/core/intake/cors.js';
import { crossOrigin, methodsOn, routes, hasParameterChild, apiMethodFor, catchAllThrottle } from '../../functions/front-door/routes.js';
import { wafRules, wafKeys, type WafKeySpec, type WafRuleSpec } from '../../functions/front-door/waf.js';

const entries = <K extends string, V>(o: Partial<Record<K, V>>) => Object.entries(o) as [K, V][];
/** API Gateway header mappings take static values in single quotes. */
const quotedHeaders = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, `'${v}'`]));

export interface CrmApiProps {
  stage: string;
  functions: Record<FunctionName, lambda.IFunction>;
  logRetention: logs.RetentionDays;
  /** The key encrypting the API's and WAF's log groups (the stage's `logEncryptionKey`), or none. */
  logKey?: kms.IKey;
}

export class CrmApi extends Construct {
  readonly api: apigw.RestApi;
  readonly webAcl: wafv2.CfnWebACL;

  constructor(scope: Construct, id: string, props: CrmApiProps) {
    super(scope, id);
    this.api = this.restApi(props);
    this.webAcl = this.createWebAcl(this.api.deploymentStage, props);
  }

  private restApi({ stage, functions, logRetention, logKey }: CrmApiProps): apigw.RestApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logRetention, encryptionKey: logKey, removalPolicy: RemovalPolicy.DESTROY });
    const api = new apigw.RestApi(this, 'Api', {
      restApiName: `crm-integration-${stage}`,
      description: 'CRM integration API: lead intake',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // Bodies the functions read reach them as bytes, so they decode UTF-8 strictly (docs/leads.md).
      binaryMediaTypes: [...binaryMediaTypes],
      // gzip/deflate of larger answers (the settings page's assets): functions/front-door/gateway-answers.ts compressionMinBytes.
      minCompressionSize: Size.bytes(compressionMinBytes),
      // Execution logs (errors only) need the account-level CloudWatch role.
      cloudWatchRole: true,
      deployOptions: {
        stageName: stage,
        // API Gateway throttles per method: the stage default is the catch-all mocks' low bucket,
        // each lead method and preflight gets the capacity-sized one (docs/capacity.md).
        throttlingRateLimit: catchAllThrottle.rateLimit,
        throttlingBurstLimit: catchAllThrottle.burstLimit,
        methodOptions: Object.fromEntries([...new Set(routes.map((r) => r.path))].flatMap((path) => [...methodsOn(path), ...(crossOrigin(path) ? ['OPTIONS'] : [])].map((method) => {
          const { throttle } = apiMethodFor(path, method);
          // A method's own entry replaces the stage default entirely: repeat the logging level.
          return [`${path}/${method}`, { throttlingRateLimit: throttle.rateLimit, throttlingBurstLimit: throttle.burstLimit, loggingLevel: apigw.MethodLoggingLevel.ERROR }];
        }))),
        tracingEnabled: true,
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
      },
    });
    api.node.tryRemoveChild('Endpoint'); // the default output; replaced by ApiUrl (outputKeys)

    // Errors API Gateway answers itself: problem+json like the function's, with CORS so a browser
    // form can read them (functions/core/intake/cors.ts; the local server answers the same).
    for (const [type, spec] of entries<GatewayResponseType, GatewayAnswerSpec>(gatewayResponses)) {
      api.addGatewayResponse(`Gateway${type}`, {
        type: apigw.ResponseType.of(type),
        statusCode: spec.status === undefined ? undefined : String(spec.status),
        responseHeaders: quotedHeaders({ 'Content-Type': 'application/problem+json', ...corsResponseHeaders, ...spec.headers }),
        templates: { 'application/json': gatewayProblemBody(spec, '$context.requestId', { json: '$context.error.messageString' }) },
      });
    }

    const integrations = new Map<FunctionName, apigw.AwsIntegration>();
    for (const route of routes) {
      if (!integrations.has(route.function)) integrations.set(route.function, this.invoke(api, stage, functions[route.function]));
      api.root.resourceForPath(route.path).addMethod(route.method, integrations.get(route.function));
    }
    // Catch-alls, so no request ever meets API Gateway's 403 "Missing Authentication Token":
    // ANY on a route's path answers 405, ANY elsewhere and {proxy+} under every path 404.
    for (const resource of [api.root, ...api.root.node.findAll().filter((c): c is apigw.Resource => c instanceof apigw.Resource)]) {
      const allowed = methodsOn(resource.path);
      if (allowed.length > 0) {
        resource.addMethod('ANY', ...this.answerWithoutFunction(catchAllAnswers.methodNotAllowed(allowed)));
        // Preflights are answered by API Gateway itself, without a key. Expose-Headers is not a
        // preflight header: it is on every real answer. Same-origin routes (settings) have none.
        const preflight = crossOrigin(resource.path) ? resource.addCorsPreflight({
          allowOrigins: cors.allowOrigins,
          allowHeaders: cors.allowHeaders,
          allowMethods: [...allowed, 'OPTIONS'],
          maxAge: Duration.seconds(cors.maxAgeSeconds),
        }) : undefined;
        // A preflight carrying a binary-typed body (binaryMediaTypes) must reach its mock as text, as the catch-alls do.
        (preflight?.node.defaultChild as apigw.CfnMethod | undefined)?.addPropertyOverride('Integration.ContentHandling', 'CONVERT_TO_TEXT');
      } else {
        resource.addMethod('ANY', ...this.answerWithoutFunction(catchAllAnswers.notFound));
      }
      // API Gateway allows one variable child: where a route has a path parameter here (`{id}`), it takes the proxy's place.
      if (!hasParameterChild(resource.path)) resource.addResource('{proxy+}').addMethod('ANY', ...this.answerWithoutFunction(catchAllAnswers.notFound));
    }
    // The execution log group API Gateway writes to is created here, before the stage, so it is part
    // of the stack and expires (left to API Gateway, it would be created outside and kept forever).
    const executionLogs = new logs.LogGroup(this, 'ApiExecutionLogs', {
      logGroupName: `API-Gateway-Execution-Logs_${api.restApiId}/${stage}`, retention: logRetention, encryptionKey: logKey, removalPolicy: RemovalPolicy.DESTROY,
    });
    api.deploymentStage.node.addDependency(executionLogs);

    Validations.of(api).acknowledge(
      { id: 'AwsSolutions-APIG2', reason: 'The function validates every body (zod) and answers 422 problem+json with per-field errors (docs/leads.md, docs/architecture.md#errors); a gateway validator would answer a different 400 shape first.' },
      { id: 'AwsSolutions-APIG4', reason: 'Callers authenticate with organization API keys, checked in the function (hashed lookup, constant-time compare); an authorizer cannot reach that key store. The settings API checks its session tokens (JWT) in its function, the settings page is static. CORS preflights and the catch-all 404/405 answers are open by design.' },
      { id: 'AwsSolutions-COG4', reason: 'Callers are web forms and automation tools holding an organization API key, not Cognito users.' },
      { id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]', reason: 'API Gateway\'s CloudWatch role, one per account and region (AWS::ApiGateway::Account), needed for execution logs: only API Gateway may assume it, and AWS\'s policy for it allows CloudWatch Logs actions (create, describe, write, read) on any log group of the account, nothing else.' },
    );
    return api;
  }

  /**
   * A proxy integration of `fn`, and the one permission letting this API's stage invoke it (any
   * method, any path; SourceAccount is added by the stack). Not LambdaIntegration's permission per
   * method: the settings function serves some twenty methods, and replacing them all in one update
   * (CloudFormation adds the new statements before deleting the old) would pass Lambda's 20 KB
   * resource-policy limit (docs/deploy.md "Upgrading a deployed stack"). No test-invoke permission.
   */
  private invoke(api: apigw.RestApi, stage: string, fn: lambda.IFunction): apigw.AwsIntegration {
    fn.addPermission('ApiInvoke', {
      principal: new iam.ServicePrincipal('apigateway.amazonaws.com'),
      sourceArn: api.arnForExecuteApi('*', '/*', stage),
    });
    // What LambdaIntegration renders, minus its permissions.
    return new apigw.AwsIntegration({ proxy: true, service: 'lambda', path: `2015-03-31/functions/${fn.functionArn}/invocations` });
  }

  /**
   * A MOCK integration answering `spec` as problem+json: no function runs (no Lambda cost). Its
   * request templates cover the usual content types (a mock fed a raw body fails with a 500); any
   * other type gets the UNSUPPORTED_MEDIA_TYPE gateway response (passthrough NEVER).
   */
  private answerWithoutFunction(spec: GatewayAnswerSpec): [apigw.MockIntegration, apigw.MethodOptions] {
    const headers = { 'Content-Type': "'application/problem+json'", 'X-Request-Id': 'context.requestId', ...quotedHeaders({ ...corsResponseHeaders, ...spec.headers }) };
    const statusCode = String(spec.status);
    return [
      new apigw.MockIntegration({
        passthroughBehavior: apigw.PassthroughBehavior.NEVER,
        // A binary-typed body (binaryMediaTypes) reaches the template as text; the template ignores it anyway.
        contentHandling: apigw.ContentHandling.CONVERT_TO_TEXT,
        requestTemplates: Object.fromEntries(mockRequestContentTypes.map((type) => [type, mockRequestTemplate])),
        integrationResponses: [{
          statusCode,
          responseParameters: Object.fromEntries(Object.entries(headers).map(([k, v]) => [`method.response.header.${k}`, v])),
          responseTemplates: { 'application/json': gatewayProblemBody(spec, '$context.requestId') },
        }],
      }),
      { methodResponses: [{ statusCode, responseParameters: Object.fromEntries(Object.keys(headers).map((k) => [`method.response.header.${k}`, true])) }] },
    ];
  }

  /**
   * The WAF in front of the stage (`wafRules`): rate-based rules per address, per well-formed API
   * key and per address for requests without one, so one caller's flood is blocked before it spends
   * a method's throttle bucket that every organization shares (docs/capacity.md). Blocks answer the
   * WAF_FILTERED gateway response.
   */
  private createWebAcl(stage: apigw.Stage, { logRetention, logKey }: CrmApiProps): wafv2.CfnWebACL {
    // No sampled requests: they would show callers' API keys (headers) in the console.
    const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, sampledRequestsEnabled: false, metricName });
    const transforms = (types: string[]) => (types.length ? types : ['NONE']).map((type, priority) => ({ priority, type }));
    const anyOf = (statements: wafv2.CfnWebACL.StatementProperty[]) => (statements.length === 1 ? statements[0] : { orStatement: { statements } });
    const allOf = (statements: wafv2.CfnWebACL.StatementProperty[]) => (statements.length === 1 ? statements[0] : { andStatement: { statements } });
    const not = (statement: wafv2.CfnWebACL.StatementProperty) => ({ notStatement: { statement } });
    // An absent header matches no regex, so "well-formed" also means "present".
    const wellFormed = (key: WafKeySpec): wafv2.CfnWebACL.StatementProperty => ({
      regexMatchStatement: { fieldToMatch: { singleHeader: { Name: key.header } } /* an untyped L1 field: CloudFormation's casing */, regexString: key.pattern, textTransformations: transforms(['LOWERCASE']) },
    });
    const isMethod = (method: string): wafv2.CfnWebACL.StatementProperty => ({
      byteMatchStatement: { fieldToMatch: { method: {} }, positionalConstraint: 'EXACTLY', searchString: method, textTransformations: transforms([]) },
    });
    const statement = (rule: WafRuleSpec): wafv2.CfnWebACL.StatementProperty => {
      const scope = [
        ...('header' in rule.key ? [wellFormed(rule.key.header)] : []),
        ...(rule.withoutKey ? [not(anyOf(Object.values(wafKeys).map(wellFormed)))] : []),
        ...(rule.exceptMethods ? [not(anyOf(rule.exceptMethods.map(isMethod)))] : []),
      ];
      return {
        rateBasedStatement: {
          limit: rule.limit,
          evaluationWindowSec: rule.windowSeconds,
          ...('header' in rule.key
            ? { aggregateKeyType: 'CUSTOM_KEYS', customKeys: [{ header: { name: rule.key.header.header, textTransformations: transforms(rule.key.transforms) } }] }
            : { aggregateKeyType: 'IP' }),
          ...(scope.length ? { scopeDownStatement: allOf(scope) } : {}),
        },
      };
    };
    const acl = new wafv2.CfnWebACL(this, 'ApiWebAcl', {
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`${Stack.of(this).stackName}-api`),
      rules: wafRules.map((rule, priority) => ({
        name: rule.name,
        priority,
        action: { block: {} },
        visibilityConfig: visibility(`${Stack.of(this).stackName}-${rule.name}`),
        statement: statement(rule),
      })),
    });
    new wafv2.CfnWebACLAssociation(this, 'ApiWebAclAssociation', { resourceArn: stage.stageArn, webAclArn: acl.attrArn });
    // Who was blocked, by which rule: "we got 429s" can be answered per address. The key headers
    // are redacted: a log line never holds a caller's API key (WAF needs the aws-waf-logs- prefix).
    const wafLogs = new logs.LogGroup(this, 'WafLogs', {
      logGroupName: `aws-waf-logs-${Stack.of(this).stackName}`, retention: logRetention, encryptionKey: logKey, removalPolicy: RemovalPolicy.DESTROY,
    });
    new wafv2.CfnLoggingConfiguration(this, 'WafLogging', {
      resourceArn: acl.attrArn,
      // The group's ARN without the `:*` that LogGroup.logGroupArn carries (WAF refuses it).
      logDestinationConfigs: [Stack.of(this).formatArn({ service: 'logs', resource: 'log-group', resourceName: wafLogs.logGroupName, arnFormat: ArnFormat.COLON_RESOURCE_NAME })],
      redactedFields: Object.values(wafKeys).map((key) => ({ singleHeader: { Name: key.header } })),
      // Only what WAF blocked or counted: every allowed request (IP, user agent, query) kept for the
      // retention would be a second, bigger request log. A key's own 429s are in the request log.
      loggingFilter: {
        DefaultBehavior: 'DROP',
        Filters: [{
          Behavior: 'KEEP', Requirement: 'MEETS_ANY',
          Conditions: [{ ActionCondition: { Action: 'BLOCK' } }, { ActionCondition: { Action: 'COUNT' } }],
        }],
      },
    });
    return acl;
  }
}
