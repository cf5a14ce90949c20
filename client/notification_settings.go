package client

import (
	"context"
	"net/http"
)

// DeleteNotificationSettings forgets the account's own messaging settings
// (DELETE /api/v1/notification-settings, scope webhooks:write): its
// providers, sealed credentials, templates, quiet hours and send rate. The
// operator's configuration serves the account again. The server answers
// 204 with no body, so the method is written by hand.
func (c *Client) DeleteNotificationSettings(ctx context.Context) error {
	return c.do(ctx, request{op: "deleteNotificationAccountSettings", method: http.MethodDelete, path: "/api/v1/notification-settings"}, nil)
}
