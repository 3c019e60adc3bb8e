// The one wrapper of Preact, its hooks and htm: pages import `html` (tagged templates instead of
// JSX, so there is no build step), `render` and the hooks from here, never from vendor/.
import { createContext, h, render } from "../vendor/preact.js";
import htm from "../vendor/htm.js";
export {
  useCallback,
  useContext,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
} from "../vendor/hooks.js";

export const html = htm.bind(h);
export { createContext, render };
