/**
 * Dates on the app's pages, in the time zone of the signed-in caller's workspace (UTC until one is set). The page
 * router runs each page in its caller's zone (`inTimeZone`), so a page formats a date without passing the zone along
 * through every table and component that shows one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as dates from '../dates.js';

const pageZone = new AsyncLocalStorage<string | null>();

/** Runs a page's work with the zone its dates are shown in. */
export function inTimeZone<T>(timeZone: string | null | undefined, fn: () => Promise<T>): Promise<T> {
  return pageZone.run(timeZone ?? null, fn);
}

/** The zone of the page being rendered (null: UTC). */
const pageTimeZone = (): string | null => pageZone.getStore() ?? null;

/** `31 January 2030`. */
export const longDateText = (value: unknown): string => dates.longDateText(value, pageTimeZone());

/** `31 Jan 2030`. */
export const dateText = (value: unknown): string => dates.dateText(value, pageTimeZone());

/** `31 Jan 2030, 15:05 CET`. */
export const timeText = (value: unknown): string => dates.timeText(value, pageTimeZone());
