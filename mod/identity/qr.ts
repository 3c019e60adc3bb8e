/** QR codes as SVG data URIs (for binding an authenticator app). The only file importing `qrcode`. */
import { Buffer } from "node:buffer";
import QRCode from "qrcode";

// The package ships no types; this is the one call used.
const qrcode = QRCode as unknown as {
  toString(text: string, options: Record<string, unknown>): Promise<string>;
};

/** `data:image/svg+xml;base64,...` of a QR code encoding `text`. */
export async function qrSvgDataUri(text: string): Promise<string> {
  const svg = await qrcode.toString(text, { type: "svg", errorCorrectionLevel: "M", margin: 2 });
  return `data:image/svg+xml;base64,${Buffer.from(svg, "utf8").toString("base64")}`;
}
