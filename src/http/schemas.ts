import { z } from 'zod';

/** Output schemas shared by the OpenAPI document. */
export const timestamp = z.iso.datetime({ offset: true }).describe('ISO 8601 with offset');
export const id = z.number().int().positive();

