/**
 * Field names under which applications take an account identifier and look it up in a
 * directory with an LDAP filter (`(uid=<value>)`, `(sAMAccountName=<value>)`). Compared with the
 * name's last part (`user[login]`, `auth.userName`, `/Envelope/Body/login/username`), lower-cased
 * and without `_` and `-` (`j_username` is `jusername`).
 *
 * Sources: the account attributes of RFC 4519 (`uid`, its alias `userid`) and RFC 2307
 * (`memberUid`); Microsoft's Active Directory schema (`sAMAccountName`, `userPrincipalName`);
 * the login fields of Java EE form authentication (`j_username`, Servlet specification, "Form
 * Based Authentication"), Atlassian products (`os_username`), WordPress (`user_login`), and the
 * defaults of Spring Security, Django, Keycloak and Dex (`username`, `login`). Name-like
 * attributes (`cn`, `sn`, `displayName`, `mail`) are left out: directory search pages offer
 * wildcards on them on purpose (`cn=Smi*`), and real names hold parentheses
 * (`Smith, John (Contractor)`).
 */
export const LDAP_ACCOUNT_FIELDS: ReadonlySet<string> = new Set([
  "uid",
  "userid",
  "memberuid",
  "samaccountname",
  "userprincipalname",
  "upn",
  "username",
  "user",
  "usr",
  "login",
  "loginname",
  "loginid",
  "logon",
  "logonname",
  "account",
  "accountname",
  "accountid",
  "principal",
  "principalname",
  "jusername",
  "osusername",
  "userlogin",
  "ldapuser",
  "ldapusername",
  "ldaplogin",
]);

/**
 * Request headers that carry the account a front proxy authenticated, which the application
 * then looks up: Apache's `REMOTE_USER` forwarded as `Remote-User` or `X-Remote-User`, Grafana's
 * auth proxy (`X-WEBAUTH-USER`), oauth2-proxy and forward-auth servers (`X-Forwarded-User`,
 * `X-Auth-Request-User`). A client that reaches the application around the proxy sets them.
 */
export const LDAP_ACCOUNT_HEADERS: ReadonlySet<string> = new Set([
  "remote-user",
  "x-remote-user",
  "x-webauth-user",
  "x-forwarded-user",
  "x-auth-request-user",
  "x-auth-user",
]);
