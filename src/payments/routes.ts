import Router from '@koa/router';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';

/** The Stripe webhook under /api/v1. */
export function paymentRoutes(api: Api, deps: AppDeps): void {
  void api;
  void deps;
}

/** POST /q/{token}/pay: creates a Checkout Session and redirects to it. */
export function paymentPageRouter(deps: AppDeps): Router {
  void deps;
  return new Router();
}
