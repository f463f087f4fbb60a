import Router from '@koa/router';
import type { AppDeps } from '../http/deps.js';

/** HTML pages outside the JSON API: the public quote page /q/{token}. */
export function pageRouter(deps: AppDeps): Router {
  void deps;
  return new Router();
}
