// The one function of coinbase-commerce-node the tests use as an oracle; the package ships no types.
declare module 'coinbase-commerce-node' {
  const coinbase: {
    Webhook: {
      /** Throws unless `signature` is the hex HMAC-SHA256 of `payload` under `secret`. */
      verifySigHeader(payload: string, signature: string, secret: string): boolean;
    };
  };
  export default coinbase;
}
