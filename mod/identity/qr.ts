/** QR codes as SVG data URIs (for binding an authenticator app). The only file importing `qrcode`. */
import QRCode from "qrcode";

const ENCODER = new TextEncoder();

// The package ships no types; this is the one call used.
const qrcode = QRCode as unknown as {
  toString(text: string, options: Record<string, unknown>): Promise<string>;
};

/** `data:image/svg+xml;base64,...` of a QR code encoding `text`. */
export async function qrSvgDataUri(text: string): Promise<string> {
  const svg = await qrcode.toString(text, { type: "svg", errorCorrectionLevel: "M", margin: 2 });
  return `data:image/svg+xml;base64,${ENCODER.encode(svg).toBase64()}`;
}
