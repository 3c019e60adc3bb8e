/** The shared buffer between the PostgreSQL store's facade and its connection thread. */

/** Int32 slots: 0 state (0 waiting, 1 answered), 1 answer length, 2 down flag, 3 answer id. */
export const HEADER_BYTES = 16;
