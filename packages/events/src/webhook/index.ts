export {
  startDeliveryWorkers,
  type DeliveryWorkers,
  type DeliveryWorkersOptions,
  type WebhookDelivery,
} from './delivery-workers.js';
export {
  redisOfflineJobs,
  sourceOfJob,
  WEBHOOK_SOURCES,
  type WebhookSource,
} from './offline-jobs.js';
export { signWebhook, verifyWebhook, SIGNATURE_TOLERANCE_S } from './signature.js';
export { WebhookMetrics } from './webhook-metrics.js';
export {
  postDelivery,
  webhookTarget,
  type RequestOutcome,
  type WebhookTarget,
} from './webhook-request.js';
