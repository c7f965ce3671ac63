/**
 * The device-login wire constants (RFC 8628) both ends must agree on: the agent's OAuth client and the
 * reference bridge's authorization server.
 */

/** The OAuth `client_id` of AIOS Device. */
export const DEVICE_CLIENT_ID = 'aios-device';

/** RFC 8628 §3.4: the device code grant type. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
