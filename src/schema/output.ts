import { z } from 'zod';

/** Output schemas shared by the OpenAPI document. */
export const timestamp = z.iso.datetime({ offset: true }).describe('ISO 8601 with offset');
export const id = z.number().int().positive();
export const money = z.string().regex(/^\d+\.\d{2}$/).describe('Money: decimal string with two decimals, e.g. "12.50"');
export const currency = z.string().regex(/^[A-Z]{3}$/).describe('ISO 4217 code');
export const quantity = z.string().regex(/^\d+(\.\d{1,3})?$/).describe('Decimal string, up to 3 decimals');
export const calendarDate = z.iso.date().describe('YYYY-MM-DD');

