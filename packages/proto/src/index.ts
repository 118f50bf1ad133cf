// Generated protobuf-es code lives in ./gen (built by `buf generate`, not committed).
export * as commonv1 from './gen/gateway/common/v1/common_pb';
export * as authv1 from './gen/gateway/auth/v1/auth_pb';
export * as policyv1 from './gen/gateway/policy/v1/policy_pb';
export * as quotav1 from './gen/gateway/quota/v1/quota_pb';
export * as routerv1 from './gen/gateway/router/v1/router_pb';
export * as eventsv1 from './gen/gateway/events/v1/usage_pb';
export * as meteringv1 from './gen/gateway/metering/v1/metering_pb';
export * as webhooksv1 from './gen/gateway/metering/v1/webhooks_pb';
export * as healthv1 from './gen/grpc/health/v1/health_pb';
export { create, toBinary, fromBinary, toJson, fromJson } from '@bufbuild/protobuf';
export type { MessageShape, MessageInitShape } from '@bufbuild/protobuf';
export * as adminaccessv1 from './gen/gateway/auth/v1/admin_access_pb';
