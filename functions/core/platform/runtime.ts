/** Where the code runs: a deployed Lambda, or the local stack running the same handlers in one process. */

/** Set by the local stack: the one place where `local: true` may take effect next to Lambda's variables. */
export const localStackMarkerEnvVar = 'CRM_LOCAL_STACK';

export const onDeployedLambda = (): boolean => Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME) && !process.env[localStackMarkerEnvVar];
