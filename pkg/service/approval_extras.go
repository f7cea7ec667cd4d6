package service

import (
	pb "github.com/toold/toold/gen/toold/v1"
	"github.com/toold/toold/pkg/errdefs"
	"github.com/toold/toold/pkg/executor"
	"github.com/toold/toold/pkg/tools"
)

// approvalExtras reads what an approval says beyond yes or no: save the
// scope as a rule, and edited arguments. Edited arguments that are not a
// JSON object refuse the message (the request stays open for another
// answer).
func approvalExtras(d *pb.ApprovalDecision, ans *executor.Approval) error {
	if !d.GetApprove() {
		return nil
	}
	ans.SaveRule = d.GetSaveAsRule()
	if s := d.GetEditedArgumentsJson(); s != "" {
		args, err := tools.DecodeArguments(s)
		if err != nil {
			return errdefs.Invalid("edited_arguments_json", "type", "edited_arguments_json is not a JSON object: %s", errdefs.As(err).Msg)
		}
		ans.EditedArgs = args
	}
	return nil
}
