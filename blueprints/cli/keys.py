import click
from flask.cli import AppGroup

from extensions import db
from services import accounts, clock, keys, webhooks

keys_cli = AppGroup("keys", help="Create, revoke and regenerate API keys.")


def _find(key_id_or_hint):
    try:
        return keys.find_key(key_id_or_hint)
    except keys.KeyRefused as refused:
        raise click.ClickException(str(refused)) from None


@keys_cli.command("create")
@click.argument("email")
@click.option("--name", default="default", help="A name to recognise the key by.")
@click.option("--sandbox", is_flag=True, help="Sample outputs only: no provider, quota, credits.")
def create(email, name, sandbox):
    """Create a key for EMAIL's account; the raw key is the last line (shown once)."""
    try:
        account = accounts.account_for_email(email)
        key, raw = keys.create_key(account, name, sandbox=sandbox)
    except (accounts.AccountRefused, keys.KeyRefused) as refused:
        raise click.ClickException(str(refused)) from None
    db.session.commit()
    kind = "sandbox key" if sandbox else "key"
    click.echo(f"Created {kind} {key.id} ({key.hint}) named {name!r} for {account.name}.")
    click.echo("Store it now: it is shown once and cannot be recovered.")
    click.echo(raw)


@keys_cli.command("revoke")
@click.argument("key_id_or_hint")
def revoke(key_id_or_hint):
    """Revoke a key (effective on every process within a second)."""
    key = _find(key_id_or_hint)
    keys.revoke_key(key)
    db.session.commit()
    click.echo(f"Revoked key {key.id} ({key.hint}).")


@keys_cli.command("regenerate")
@click.argument("key_id_or_hint")
@click.option(
    "--keep-old-for",
    type=click.Choice(list(keys.ROLL_OVERLAPS)),
    default="now",
    show_default=True,
    help="How long the old key keeps working beside the new one (now: revoked at once).",
)
def regenerate(key_id_or_hint, keep_old_for):
    """Roll a key: a new one with the same settings (its raw key last), the old one revoked
    now or kept working for --keep-old-for."""
    key = _find(key_id_or_hint)
    try:
        new_key, raw = keys.regenerate_key(key, keep_old_for=keep_old_for)
    except keys.KeyRefused as refused:
        raise click.ClickException(str(refused)) from None
    db.session.commit()
    if key.revoked_at is not None:
        click.echo(f"Revoked {key.hint}; the new key {new_key.id} ({new_key.hint}) replaces it.")
    else:
        until = clock.as_utc(key.expires_at).isoformat(timespec="seconds")
        click.echo(
            f"{key.hint} keeps working until {until}; the new key {new_key.id} "
            f"({new_key.hint}) replaces it."
        )
    click.echo(raw)


@keys_cli.command("set-limits")
@click.argument("key_id_or_hint")
@click.option("--per-minute", type=click.IntRange(min=1), help="Requests per minute.")
@click.option("--daily", type=click.IntRange(min=0), help="Calls per UTC day.")
def set_limits(key_id_or_hint, per_minute, daily):
    """Override the plan's per-minute and daily figures for one key."""
    if per_minute is None and daily is None:
        raise click.UsageError("Give --per-minute, --daily or both.")
    key = _find(key_id_or_hint)
    if per_minute is not None:
        key.per_minute_override = per_minute
    if daily is not None:
        key.daily_override = daily
    keys.forget(key.key_hash)
    db.session.commit()
    click.echo(
        f"Key {key.id} ({key.hint}): per minute {key.per_minute_override or 'plan default'}, "
        f"daily {key.daily_override if key.daily_override is not None else 'plan default'}."
    )


@keys_cli.command("set-webhook")
@click.argument("key_id_or_hint")
@click.option("--url", help="The http(s) URL that receives the key's events.")
@click.option("--clear", is_flag=True, help="Remove the key's webhook.")
def set_webhook(key_id_or_hint, url, clear):
    """Set (or --clear) a key's webhook URL; a new webhook's secret is the last line."""
    if (url is None) == (not clear):
        raise click.UsageError("Give either --url URL or --clear.")
    key = _find(key_id_or_hint)
    try:
        secret = webhooks.save(key, None if clear else url)
    except webhooks.WebhookRefused as refused:
        raise click.ClickException(refused.message) from None
    db.session.commit()
    if clear:
        click.echo(f"Key {key.id} ({key.hint}) has no webhook now.")
        return
    click.echo(f"Key {key.id} ({key.hint}) sends its events to {key.webhook_url}.")
    if secret is not None:
        _echo_secret(secret)


@keys_cli.command("rotate-webhook-secret")
@click.argument("key_id_or_hint")
def rotate_webhook_secret(key_id_or_hint):
    """Give a key a new webhook secret; it is the last line (shown once)."""
    key = _find(key_id_or_hint)
    secret = webhooks.rotate(key)
    db.session.commit()
    click.echo(f"Key {key.id} ({key.hint}) signs its webhook deliveries with a new secret.")
    _echo_secret(secret)


def _echo_secret(secret: str) -> None:
    click.echo("Store the webhook secret now: it is shown once.")
    click.echo(secret)
