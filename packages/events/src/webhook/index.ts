export {
  startDeliveryWorkers,
  type DeliveryWorkers,
  type DeliveryWorkersOptions,
} from './delivery-workers.js';
export { deliveryFor, type WebhookDelivery } from './sync-decision.js';
export {
  lowers,
  reasonOfJob,
  redisOfflineJobs,
  WEBHOOK_SOURCES,
  type WebhookSource,
} from './offline-jobs.js';
export { pushRequests, type ApnsRequest, type FcmRequest } from './push-payloads.js';
export { signWebhook, verifyWebhook, SIGNATURE_TOLERANCE_S } from './signature.js';
export { WebhookMetrics } from './webhook-metrics.js';
export {
  postDelivery,
  webhookTarget,
  type RequestOutcome,
  type WebhookTarget,
} from './webhook-request.js';
