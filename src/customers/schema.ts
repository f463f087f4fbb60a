import { z } from 'zod';
import { booleanInput, countryInput, emailInput, filterInput, optionalLine, optionalText } from '../schema/input.js';
import { id, timestamp } from '../schema/output.js';

const fields = {
  name: optionalLine(200),
  company: optionalLine(200),
  phone: optionalLine(50),
  country: countryInput,
  notes: optionalText(10_000),
};

export const createCustomerBody = z.object({ email: emailInput, ...fields });
export const updateCustomerBody = z.object({ email: emailInput.optional(), ...fields });
export type CustomerChanges = z.output<typeof updateCustomerBody>;

export const listCustomersQuery = z.object({ q: filterInput.describe('Case-insensitive substring of name, email or company') });
export const deleteCustomerQuery = z.object({ cascade: booleanInput.optional().describe('1 also deletes the dependent quotes, orders and visitors') });

export const customerOut = z.object({
  id,
  email: z.string(),
  name: z.string().nullable(),
  company: z.string().nullable(),
  phone: z.string().nullable(),
  country: z.string().nullable(),
  notes: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'Customer' });
