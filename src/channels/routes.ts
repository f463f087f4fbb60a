import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';

export function channelRoutes(api: Api, deps: AppDeps): void {
  void api;
  void deps;
}
