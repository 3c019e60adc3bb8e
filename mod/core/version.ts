/** Product version; bumped on release. */
export const VERSION = "0.1.0";
