import { z } from 'zod';

/** An integer variable from `min` to `max` (environment values are text). */
export const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
